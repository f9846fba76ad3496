import nodemailer from 'nodemailer';
import type { ServiceCtx } from '../context.js';
import { randomAlnum } from '../ids.js';
import type { EmailAttachment } from './outbox.js';

/** Retry delays after failed sends (seconds); after the last one the e-mail is `failed`. */
export const EMAIL_RETRY_DELAYS = [60, 300, 900, 3600, 3600 * 6];
const LEASE_MS = 120_000;
/**
 * Every SMTP stage (connect, greeting, each idle wait) gives up well inside the lease, so a send
 * cannot outlive the claim it runs under and be claimed and sent again by another worker.
 */
const SMTP_TIMEOUT_MS = 30_000;

export interface MailMessage {
  from: string;
  to: string;
  subject: string;
  text: string;
  html?: string;
  attachments?: EmailAttachment[];
  headers?: Record<string, string>;
}

export interface MailTransport {
  sendMail(message: MailMessage): Promise<unknown>;
  close(): void;
}

export function createMailTransport(smtpUrl: string): MailTransport {
  return nodemailer.createTransport(smtpUrl, {
    connectionTimeout: SMTP_TIMEOUT_MS,
    greetingTimeout: SMTP_TIMEOUT_MS,
    socketTimeout: SMTP_TIMEOUT_MS,
  });
}

interface ClaimedEmail {
  id: string;
  to_address: string;
  subject: string;
  body: string;
  html: string | null;
  attachments: string | null;
  headers: string | null;
  attempts: number;
  token: string;
}

/**
 * Claims the next due e-mail with its own lease and a random token: one at a time, so the
 * lease covers this send only, not the sends queued before it.
 */
async function claimNextEmail(ctx: ServiceCtx): Promise<ClaimedEmail | null> {
  const now = ctx.clock.now().getTime();
  const token = `mail_${randomAlnum(16)}`;
  const claimed = await ctx.db
    .with(
      (cte) => cte('due').materialized(),
      (db) =>
        db
          .selectFrom('emails')
          .select('id')
          .where('status', '=', 'pending')
          .where('next_attempt_at', '<=', now)
          .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
          .orderBy('next_attempt_at')
          .limit(1)
          .$if(ctx.engine === 'postgres', (qb) => qb.forUpdate().skipLocked()),
    )
    .updateTable('emails')
    .set((eb) => ({ locked_until: now + LEASE_MS, claimed_by: token, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', (eb) => eb.selectFrom('due').select('due.id'))
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
    .returning(['id', 'to_address', 'subject', 'body', 'html', 'attachments', 'headers', 'attempts'])
    .executeTakeFirst();
  return claimed ? { ...claimed, token } : null;
}

/**
 * Sends up to `limit` due e-mails once each: each claimed with a lease like webhook deliveries,
 * then marked `sent`, or rescheduled with the error, by the claim holder only. Without
 * TALLY_SMTP_URL they stay `pending` until it is set.
 */
export async function sendDueEmails({
  ctx,
  transport,
  limit = 20,
}: {
  ctx: ServiceCtx;
  transport: MailTransport;
  limit?: number;
}): Promise<number> {
  let handled = 0;
  for (; handled < limit; handled++) {
    const mail = await claimNextEmail(ctx);
    if (!mail) break;
    try {
      await transport.sendMail({
        from: ctx.config.emailFrom,
        to: mail.to_address,
        subject: mail.subject,
        text: mail.body,
        ...(mail.html === null ? {} : { html: mail.html }),
        ...(mail.attachments === null
          ? {}
          : { attachments: JSON.parse(mail.attachments) as EmailAttachment[] }),
        ...(mail.headers === null ? {} : { headers: JSON.parse(mail.headers) as Record<string, string> }),
      });
      await ctx.db
        .updateTable('emails')
        .set({
          status: 'sent',
          sent_at: ctx.clock.now().getTime(),
          locked_until: null,
          next_attempt_at: null,
          last_error: null,
        })
        .where('id', '=', mail.id)
        .where('claimed_by', '=', mail.token)
        .execute();
    } catch (error) {
      const delay = EMAIL_RETRY_DELAYS[Number(mail.attempts) - 1];
      const failedAt = ctx.clock.now().getTime();
      await ctx.db
        .updateTable('emails')
        .set({
          status: delay === undefined ? 'failed' : 'pending',
          next_attempt_at: delay === undefined ? null : failedAt + delay * 1000,
          locked_until: null,
          last_error: (error as Error).message.slice(0, 1000),
        })
        .where('id', '=', mail.id)
        .where('claimed_by', '=', mail.token)
        .execute();
    }
  }
  return handled;
}
