import type { Migration } from 'kysely';
import * as core from './2026_11_22_0001_core.js';
import * as reports from './2026_11_22_0002_reports.js';
import * as webhooks from './2026_11_22_0003_webhooks.js';
import * as rollupPairs from './2026_11_22_0004_rollup_pairs.js';
import * as rollupBuckets from './2026_11_22_0005_rollup_buckets.js';
import * as rollupOutcomes from './2026_11_22_0006_rollup_outcomes.js';
import * as keyScopes from './2026_11_24_0007_key_scopes.js';
import * as dashboardSessions from './2026_11_24_0008_dashboard_sessions.js';
import * as ingestWatermark from './2026_11_24_0010_ingest_watermark.js';
import * as rollupSumsNumeric from './2026_11_24_0011_rollup_sums_numeric.js';
import * as rollupFewerRows from './2026_11_24_0012_rollup_fewer_rows.js';
import * as coarseThrough from './2026_11_24_0013_coarse_through.js';
import * as eventsFewerIndexes from './2026_11_24_0014_events_fewer_indexes.js';
import * as monthsThrough from './2026_11_24_0015_months_through.js';
import * as foldParts from './2026_11_25_0016_fold_parts.js';
import * as webhookSubscriptionVersions from './2026_11_27_0017_webhook_subscription_versions.js';
import * as webhookSecretsEncrypted from './2026_11_27_0018_webhook_secrets_encrypted.js';
import * as otlp from './2026_11_28_0040_otlp.js';
import * as budgets from './2026_11_28_0050_budgets.js';
import * as payback from './2026_11_28_0051_payback.js';
import * as reportEmails from './2026_11_28_0052_report_emails.js';
import * as ledger from './2026_11_28_0060_ledger.js';
import * as assumptionVersions from './2026_11_28_0065_assumption_versions.js';
import * as periods from './2026_11_28_0070_periods.js';
import * as people from './2026_11_28_0080_people.js';
import * as restatementAdjustFrom from './2026_11_28_0085_restatement_adjust_from.js';

/** Every migration, by name; names sort in the order they apply. Add new files here. */
export const migrations: Record<string, Migration> = {
  '2026_11_22_0001_core': core,
  '2026_11_22_0002_reports': reports,
  '2026_11_22_0003_webhooks': webhooks,
  '2026_11_22_0004_rollup_pairs': rollupPairs,
  '2026_11_22_0005_rollup_buckets': rollupBuckets,
  '2026_11_22_0006_rollup_outcomes': rollupOutcomes,
  '2026_11_24_0007_key_scopes': keyScopes,
  '2026_11_24_0008_dashboard_sessions': dashboardSessions,
  '2026_11_24_0010_ingest_watermark': ingestWatermark,
  '2026_11_24_0011_rollup_sums_numeric': rollupSumsNumeric,
  '2026_11_24_0012_rollup_fewer_rows': rollupFewerRows,
  '2026_11_24_0013_coarse_through': coarseThrough,
  '2026_11_24_0014_events_fewer_indexes': eventsFewerIndexes,
  '2026_11_24_0015_months_through': monthsThrough,
  '2026_11_25_0016_fold_parts': foldParts,
  '2026_11_27_0017_webhook_subscription_versions': webhookSubscriptionVersions,
  '2026_11_27_0018_webhook_secrets_encrypted': webhookSecretsEncrypted,
  '2026_11_28_0040_otlp': otlp,
  '2026_11_28_0050_budgets': budgets,
  '2026_11_28_0051_payback': payback,
  '2026_11_28_0052_report_emails': reportEmails,
  '2026_11_28_0060_ledger': ledger,
  '2026_11_28_0065_assumption_versions': assumptionVersions,
  '2026_11_28_0070_periods': periods,
  '2026_11_28_0080_people': people,
  '2026_11_28_0085_restatement_adjust_from': restatementAdjustFrom,
};
