import type { DbOrTrx } from '../storage/db.js';
import { newId } from '../ids.js';

export interface EmailAttachment {
  filename: string;
  contentType: string;
  /** UTF-8 text (a CSV file). */
  content: string;
}

export interface EmailInput {
  orgId: string | null;
  to: string;
  subject: string;
  /** The plain-text part. */
  body: string;
  /** An HTML alternative to the plain text. */
  html?: string;
  attachments?: EmailAttachment[];
  /** Extra headers, e.g. List-Unsubscribe. */
  headers?: Record<string, string>;
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
        html: e.html ?? null,
        attachments: e.attachments ? JSON.stringify(e.attachments) : null,
        headers: e.headers ? JSON.stringify(e.headers) : null,
      })),
    )
    .execute();
}
