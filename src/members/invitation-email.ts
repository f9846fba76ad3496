import type { Role } from '../accounts/roles.js';
import { html } from '../dashboard/html.js';

const ROLE_WORDS: Record<Role, string> = {
  owner: 'an owner (everything, members included)',
  admin: 'an admin (settings, API keys, webhooks, task types and baselines)',
  analyst: 'an analyst (every report and page, reading only)',
};

const when = (at: Date) =>
  `${at.toLocaleDateString('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' })}, ${at.toISOString().slice(11, 16)} UTC`;

/** The invitation e-mail: plain text and an HTML alternative with the same link. */
export function invitationEmail(input: { orgName: string; role: Role; url: string; expiresAt: Date }) {
  const subject = `[Tally] You are invited to ${input.orgName}`;
  const text = [
    `You are invited to join ${input.orgName} on Tally as ${ROLE_WORDS[input.role]}.`,
    '',
    `Accept the invitation: ${input.url}`,
    '',
    `The link works once and until ${when(input.expiresAt)}.`,
    'If you did not expect this invitation, ignore this e-mail.',
  ].join('\n');
  const body = html`<table
    role="presentation"
    width="100%"
    cellpadding="0"
    cellspacing="0"
    style="font-family:Arial,sans-serif;color:#1b2330;"
  >
    <tr>
      <td style="padding:24px;">
        <p style="margin:0 0 16px 0;font-size:16px;">
          You are invited to join <strong>${input.orgName}</strong> on Tally as ${ROLE_WORDS[input.role]}.
        </p>
        <p style="margin:0 0 16px 0;">
          <a
            href="${input.url}"
            style="display:inline-block;padding:10px 18px;background:#1f5fbf;color:#ffffff;text-decoration:none;border-radius:4px;"
            >Accept the invitation</a
          >
        </p>
        <p style="margin:0 0 8px 0;font-size:13px;color:#5b6675;">
          The link works once and until ${when(input.expiresAt)}.
        </p>
        <p style="margin:0;font-size:13px;color:#5b6675;">
          If you did not expect this invitation, ignore this e-mail.
        </p>
      </td>
    </tr>
  </table>`;
  return { subject, text, html: `<!doctype html><html><body>${body.text}</body></html>` };
}
