import nodemailer from 'nodemailer';
import type { ServiceCtx } from '../context.js';

/** Retry delays after failed sends (seconds); after the last one the e-mail is `failed`. */
export const EMAIL_RETRY_DELAYS = [60, 300, 900, 3600, 3600 * 6];
const LEASE_MS = 120_000;

export interface MailTransport {
  sendMail(message: { from: string; to: string; subject: string; text: string }): Promise<unknown>;
  close(): void;
}

export function createMailTransport(smtpUrl: string): MailTransport {
  return nodemailer.createTransport(smtpUrl);
}

/**
 * Sends due e-mails once each: claimed with a lease like webhook deliveries, then marked `sent`,
 * or rescheduled with the error. Without TALLY_SMTP_URL they stay `pending` until it is set.
 */
export async function sendDueEmails({
  ctx,
  transport,
  token,
  limit = 20,
}: {
  ctx: ServiceCtx;
  transport: MailTransport;
  token: string;
  limit?: number;
}): Promise<number> {
  const now = ctx.clock.now().getTime();
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
          .limit(limit)
          .$if(ctx.engine === 'postgres', (qb) => qb.forUpdate().skipLocked()),
    )
    .updateTable('emails')
    .set((eb) => ({ locked_until: now + LEASE_MS, claimed_by: token, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', (eb) => eb.selectFrom('due').select('due.id'))
    .where('status', '=', 'pending')
    .returning(['id', 'to_address', 'subject', 'body', 'attempts'])
    .execute();
  for (const mail of claimed) {
    try {
      await transport.sendMail({
        from: ctx.config.emailFrom,
        to: mail.to_address,
        subject: mail.subject,
        text: mail.body,
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
        .where('claimed_by', '=', token)
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
        .where('claimed_by', '=', token)
        .execute();
    }
  }
  return claimed.length;
}
