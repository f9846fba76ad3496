import type { ServiceCtx } from '../context.js';
import { queueDueReportEmails } from '../report-emails/send.js';
import { evaluateAlerts } from './evaluate.js';

/**
 * What the worker's scheduler runs every TALLY_ALERT_CHECK_SECONDS (webhooks/worker.ts): the
 * budget and usage alerts, then the report e-mails due. Everything is derived from the stored figures, so a pass that a crash
 * cut short is simply done again by the next one, in this process or another.
 */
export async function runScheduledChecks({ ctx }: { ctx: ServiceCtx }): Promise<void> {
  await evaluateAlerts({ ctx });
  await queueDueReportEmails({ ctx });
}
