import { Option, type Command } from 'commander';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { ROLES } from '../accounts/roles.js';
import { print } from '../cli/output.js';
import { getOrganization } from '../orgs/organizations.js';
import {
  createInvitation,
  invitationUrl,
  listInvitations,
  resendInvitation,
  revokeInvitation,
} from './invitations.js';
import { changeMemberRole, listMembers, memberByEmail, removeMember, type MemberView } from './members.js';

type WithCtx = <T>(fn: (ctx: ServiceCtx) => Promise<T>) => Promise<T>;

/** The CLI acts as the organisation's owner (the operator holds the database). */
async function orgCtx(ctx: ServiceCtx, orgId: string): Promise<OrgCtx> {
  return { ...ctx, org: await getOrganization({ ctx, id: orgId }), actorKeyId: null };
}

function line(m: MemberView): string {
  const seen = m.last_seen_at ? `, last seen ${m.last_seen_at}` : '';
  return `${m.account_id}  ${m.email}${m.name ? ` (${m.name})` : ''}  ${m.role}  since ${m.since}${seen}`;
}

/** The `tally members` group; commands of people's other parts register on the same group. */
export function membersGroup(program: Command): Command {
  return program.command('members').description("An organisation's people: invitations, roles, removal");
}

/** `tally members invite|list|role|remove`: the verbs of /v1/invitations and /v1/members. */
export function registerMemberCommands(members: Command, withCtx: WithCtx): void {
  const json = ['--json', 'machine-readable output'] as const;
  const role = () =>
    new Option('--role <role>', 'owner, admin or analyst').choices(ROLES).makeOptionMandatory();

  members
    .command('invite')
    .description(
      'Invite an e-mail with a role: the invitation e-mail goes out, and the link (valid 7 days, single use) is printed too',
    )
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--email <email>', 'the address to invite')
    .addOption(role())
    .option(...json, false)
    .action(async (opts: { org: string; email: string; role: string; json: boolean }) => {
      const { invitation, url, resent } = await withCtx(async (ctx) => {
        const org = await orgCtx(ctx, opts.org);
        const created = await createInvitation({ ctx: org, input: { email: opts.email, role: opts.role } });
        return { ...created, url: invitationUrl(ctx, created.token) };
      });
      print(opts.json, { invitation, url }, () => [
        `${resent ? 'Sent again' : 'Invited'} ${invitation.email} as ${invitation.role} (${invitation.id}), until ${invitation.expires_at}.`,
        `Link (single use): ${url}`,
      ]);
    });

  members
    .command('list')
    .description("List the organisation's members and its pending invitations")
    .requiredOption('--org <id>', 'organisation id')
    .option(...json, false)
    .action(async (opts: { org: string; json: boolean }) => {
      const { data, invitations } = await withCtx(async (ctx) => {
        const org = await orgCtx(ctx, opts.org);
        const all: MemberView[] = [];
        let cursor: string | undefined;
        do {
          const page = await listMembers({ ctx: org, limit: 100, ...(cursor ? { cursor } : {}) });
          all.push(...page.data);
          cursor = page.next_cursor ?? undefined;
        } while (cursor);
        const pending = await listInvitations({ ctx: org, limit: 100, status: 'pending' });
        return { data: all, invitations: pending.data };
      });
      print(opts.json, { data, invitations }, () => [
        ...(data.length === 0 ? ['no members'] : data.map(line)),
        ...invitations.map((i) => `${i.id}  ${i.email}  ${i.role}  invited, until ${i.expires_at}`),
      ]);
    });

  members
    .command('resend')
    .description(
      'Send an invitation again with a new link, valid 7 days from now; the previous link stops working',
    )
    .argument('<invitation>', 'the invitation id (inv_…), as tally members list prints it')
    .requiredOption('--org <id>', 'organisation id')
    .option(...json, false)
    .action(async (id: string, opts: { org: string; json: boolean }) => {
      const { invitation, url } = await withCtx(async (ctx) => {
        const org = await orgCtx(ctx, opts.org);
        const sent = await resendInvitation({ ctx: org, id });
        return { invitation: sent.invitation, url: invitationUrl(ctx, sent.token) };
      });
      print(opts.json, { invitation, url }, () => [
        `Sent again ${invitation.email} as ${invitation.role} (${invitation.id}), until ${invitation.expires_at}.`,
        `Link (single use): ${url}`,
      ]);
    });

  members
    .command('revoke')
    .description('Revoke an invitation: its link stops working (an accepted one cannot be revoked)')
    .argument('<invitation>', 'the invitation id (inv_…), as tally members list prints it')
    .requiredOption('--org <id>', 'organisation id')
    .option(...json, false)
    .action(async (id: string, opts: { org: string; json: boolean }) => {
      const invitation = await withCtx(async (ctx) =>
        revokeInvitation({ ctx: await orgCtx(ctx, opts.org), id }),
      );
      print(opts.json, { invitation }, () => [
        `Revoked the invitation of ${invitation.email} (${invitation.id}).`,
      ]);
    });

  members
    .command('role')
    .description("Change a member's role (an organisation keeps at least one owner)")
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--email <email>', "the member's e-mail")
    .addOption(role())
    .option(...json, false)
    .action(async (opts: { org: string; email: string; role: string; json: boolean }) => {
      const member = await withCtx(async (ctx) => {
        const org = await orgCtx(ctx, opts.org);
        const current = await memberByEmail({ ctx: org, email: opts.email });
        return changeMemberRole({ ctx: org, accountId: current.account_id, role: opts.role });
      });
      print(opts.json, { member }, () => [`${member.email} is now ${member.role}.`]);
    });

  members
    .command('remove')
    .description("Remove a member; the person's dashboard sessions in the organisation end")
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--email <email>', "the member's e-mail")
    .option(...json, false)
    .action(async (opts: { org: string; email: string; json: boolean }) => {
      const member = await withCtx(async (ctx) => {
        const org = await orgCtx(ctx, opts.org);
        const current = await memberByEmail({ ctx: org, email: opts.email });
        await removeMember({ ctx: org, accountId: current.account_id });
        return current;
      });
      print(opts.json, { removed: member.account_id }, () => [`Removed ${member.email}.`]);
    });
}
