import type { DbOrTrx } from '../storage/db.js';
import { newId } from '../ids.js';

export interface EmailInput {
  orgId: string | null;
  to: string;
  subject: string;
  body: string;
}

/**
 * Stores e-mails to send, with `db` (the transaction of their cause); the worker sends them
 * and keeps their send status, so an SMTP outage delays mail but loses none.
 */
export async function queueEmails({ db, emails, at }: { db: DbOrTrx; emails: EmailInput[]; at: Date }) {
  if (emails.length === 0) return;
  await db
    .insertInto('emails')
    .values(
      emails.map((e) => ({
        id: newId('mail', at),
        org_id: e.orgId,
        to_address: e.to,
        subject: e.subject,
        body: e.body,
        status: 'pending',
        attempts: 0,
        next_attempt_at: at.getTime(),
        locked_until: null,
        claimed_by: null,
        last_error: null,
        created_at: at.getTime(),
        sent_at: null,
      })),
    )
    .execute();
}
