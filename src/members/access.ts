import type { OrgCtx } from '../context.js';
import { AppError } from '../errors.js';
import { roleAtLeast, type Role } from '../accounts/roles.js';

/** Who is acting on the members of an organisation, as the members verbs need to know it. */
export interface MembersActor {
  role: Role;
  /** The person acting (from the dashboard, or the creator of the API key); null otherwise. */
  accountId: string | null;
  keyId: string | null;
}

/** The actor of `ctx`: the CLI acts as owner, an admin API key as admin. */
export function membersActor(ctx: OrgCtx): MembersActor {
  if (ctx.actorKeyId === null) return { role: 'owner', accountId: null, keyId: null };
  return { role: 'admin', accountId: null, keyId: ctx.actorKeyId };
}

export function requireRole(ctx: OrgCtx, needed: Role): void {
  if (!roleAtLeast(membersActor(ctx).role, needed)) {
    throw new AppError('insufficient_scope', `This needs the ${needed} role.`);
  }
}
