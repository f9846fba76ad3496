import { Command, InvalidArgumentError, Option } from 'commander';
import { systemClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import type { ServiceCtx } from '../context.js';
import { withSecretBox } from '../crypto/secret-keys.js';
import { isPlanName, type PlanName } from '../billing/plans.js';
import { createApiKey, listApiKeys, organizationOfKey, revokeApiKey } from '../orgs/api-keys.js';
import { createOrganization, listOrganizations, organizationView, setPlan } from '../orgs/organizations.js';
import { updateSettings } from '../settings/settings.js';
import { migrateStorage, openStorage } from '../storage/db.js';
import { queueDigestWeekAt } from '../webhooks/digest.js';
import { resealWebhookSecrets } from '../webhooks/secret-storage.js';
import { resealSsoSecrets } from '../sso/secret.js';
import { DeliveryWorker } from '../webhooks/worker.js';
import { registerBudgetCommands } from '../budgets/cli.js';
import { registerPeriodCommands } from '../periods/cli.js';
import { print } from './output.js';
import { registerOtlpCommands } from '../otlp/cli.js';
import { membersGroup, registerMemberCommands } from '../members/cli.js';
import { registerCreateOwnerCommand } from '../accounts/cli.js';

function number(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n)) throw new InvalidArgumentError('must be a number');
  return n;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function rfc3339(value: string, option: string): Date {
  const at = new Date(value);
  if (!RFC3339.test(value) || Number.isNaN(at.getTime())) {
    throw new InvalidArgumentError(
      `${option} must be an RFC 3339 time with a zone, e.g. 2026-11-23T09:00:00Z`,
    );
  }
  return at;
}

function plan(value: string): PlanName {
  if (!isPlanName(value)) throw new InvalidArgumentError('must be free, pro or enterprise');
  return value;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * Opens storage (migrated), runs `fn` with a service context, closes storage. With `secrets`,
 * the context can seal and open secrets at rest, and the command stops without a key as `serve`
 * does; the other commands need none.
 */
async function withCtx<T>(
  fn: (ctx: ServiceCtx) => Promise<T>,
  options: { secrets?: boolean } = {},
): Promise<T> {
  const config = options.secrets ? withSecretBox(loadConfig()) : loadConfig();
  const storage = openStorage(config.databaseUrl, { timeouts: config.database });
  try {
    await migrateStorage(storage, config.databaseUrl, { timeouts: config.database });
    return await fn({ db: storage.db, engine: storage.engine, clock: systemClock, config, storage });
  } finally {
    await storage.close();
  }
}

const FORCED_EXIT_GRACE_MS = 5_000;

/** Starts the service and stops it gracefully on SIGTERM or SIGINT. */
async function runUntilSignal(config: Config, stopping: string): Promise<void> {
  // Loaded here so the other commands start without the HTTP stack.
  const { startService } = await import('../service.js');
  const service = await startService(config);
  if (config.role === 'worker') process.stderr.write('tally worker running\n');
  const shutdown = async (signal: string) => {
    process.stderr.write(`${signal} received; ${stopping}\n`);
    // stop() closes the connections left at TALLY_SHUTDOWN_TIMEOUT_MS; should anything else hang
    // (a worker delivery, a database that stopped answering), the process still ends soon after.
    setTimeout(() => {
      process.stderr.write('shutdown did not finish in time; exiting\n');
      process.exit(1);
    }, config.shutdownTimeoutMs + FORCED_EXIT_GRACE_MS).unref();
    await service.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

export function buildCli(): Command {
  const program = new Command('tally').description('Tally: what AI agents are worth.').showHelpAfterError();

  program
    .command('serve')
    .summary('Run the HTTP API and dashboard, and the background work unless TALLY_ROLE=api')
    .description(
      'Run the HTTP API, the dashboard and the API reference; unless TALLY_ROLE=api, also the background work of `tally worker` (folding stage, webhook delivery, scheduler)',
    )
    .action(() => runUntilSignal(loadConfig(), 'finishing in-flight requests'));

  program
    .command('migrate')
    .description('Apply pending database migrations (serve and worker apply them too)')
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { json: boolean }) => {
      const config = loadConfig();
      const storage = openStorage(config.databaseUrl, { timeouts: config.database });
      try {
        const applied = await migrateStorage(storage, config.databaseUrl, { timeouts: config.database });
        print(opts.json, { applied }, () =>
          applied.length ? applied.map((m) => `applied ${m}`) : ['database is up to date'],
        );
      } finally {
        await storage.close();
      }
    });

  const orgs = program.command('orgs').description('Manage organisations');
  orgs
    .command('create')
    .description('Create an organisation and its first API key (admin scope), printed once')
    .requiredOption('--name <name>', 'organisation name')
    .option('--plan <plan>', 'free, pro or enterprise', plan, 'free' as PlanName)
    .option('--currency <code>', 'ISO 4217 currency', 'EUR')
    .option('--hourly-rate <rate>', 'default hourly rate', number, 50)
    .option('--admin-email <email>', 'admin e-mail (repeatable)', collect, [] as string[])
    .option('--json', 'machine-readable output', false)
    .action(
      async (opts: {
        name: string;
        plan: PlanName;
        currency: string;
        hourlyRate: number;
        adminEmail: string[];
        json: boolean;
      }) => {
        const created = await withCtx((ctx) =>
          createOrganization({
            ctx,
            input: {
              name: opts.name,
              plan: opts.plan,
              currency: opts.currency,
              hourlyRate: opts.hourlyRate,
              adminEmails: opts.adminEmail,
            },
          }),
        );
        print(opts.json, { org: organizationView(created.org), api_key: created.api_key }, () => [
          `Created ${created.org.id} (${created.org.name}, plan ${created.org.plan}).`,
          `API key (shown once): ${created.api_key}`,
        ]);
      },
    );
  orgs
    .command('list')
    .description('List the organisations: id, plan, currency, name')
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { json: boolean }) => {
      const list = await withCtx((ctx) => listOrganizations({ ctx }));
      print(opts.json, { data: list.map(organizationView) }, () =>
        list.map((o) => `${o.id}  ${o.plan.padEnd(10)} ${o.currency}  ${o.name}`),
      );
    });
  orgs
    .command('set-plan')
    .description("Change an organisation's plan")
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--plan <plan>', 'free, pro or enterprise', plan)
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { org: string; plan: PlanName; json: boolean }) => {
      const org = await withCtx((ctx) => setPlan({ ctx, id: opts.org, plan: opts.plan }));
      print(opts.json, { org: organizationView(org) }, () => [`${org.id} is now on the ${org.plan} plan.`]);
    });
  orgs
    .command('update')
    .description("Change an organisation's default hourly rate or fallback baseline")
    .requiredOption('--org <id>', 'organisation id')
    .option('--hourly-rate <rate>', 'default hourly rate', number)
    .option('--fallback-baseline-minutes <minutes>', 'baseline for unknown task types ("off" to unset)')
    .option('--json', 'machine-readable output', false)
    .action(
      async (opts: { org: string; hourlyRate?: number; fallbackBaselineMinutes?: string; json: boolean }) => {
        const fallback = opts.fallbackBaselineMinutes;
        const org = await withCtx((ctx) =>
          updateSettings({
            ctx,
            orgId: opts.org,
            patch: {
              ...(opts.hourlyRate !== undefined ? { default_hourly_rate: opts.hourlyRate } : {}),
              ...(fallback !== undefined
                ? { fallback_baseline_minutes: fallback === 'off' ? null : number(fallback) }
                : {}),
            },
          }),
        );
        print(opts.json, { org: organizationView(org) }, () => [`Updated ${org.id}.`]);
      },
    );

  const keys = program.command('keys').description('Manage API keys');
  keys
    .command('create')
    .description('Create an API key for an organisation, printed once')
    .requiredOption('--org <id>', 'organisation id')
    .option('--name <name>', 'a label for the key')
    .addOption(
      new Option('--scope <scope>', 'what the key may do').choices(['admin', 'ingest']).default('admin'),
    )
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { org: string; name?: string; scope: string; json: boolean }) => {
      const created = await withCtx((ctx) =>
        createApiKey({ ctx, orgId: opts.org, name: opts.name, scope: opts.scope }),
      );
      print(opts.json, created, () => [
        `Created ${created.key.scope} key ${created.key.id}.`,
        `API key (shown once): ${created.api_key}`,
      ]);
    });
  keys
    .command('list')
    .description("List an organisation's keys: id, scope, active or revoked, created, name")
    .requiredOption('--org <id>', 'organisation id')
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { org: string; json: boolean }) => {
      const list = await withCtx((ctx) => listApiKeys({ ctx, orgId: opts.org }));
      print(opts.json, { data: list }, () =>
        list.map(
          (k) =>
            `${k.id}  ${k.scope.padEnd(6)}  ${k.revoked_at ? 'revoked' : 'active '}  ${k.created_at}  ${k.name ?? ''}`,
        ),
      );
    });
  keys
    .command('revoke')
    .description('Revoke a key by its id; requests with it answer key_revoked from then on')
    .argument('<key_id>', 'the 8-character key id')
    .option('--json', 'machine-readable output', false)
    .action(async (keyId: string, opts: { json: boolean }) => {
      // The key id names one organisation (ids are unique across the service).
      const key = await withCtx(async (ctx) =>
        revokeApiKey({ ctx, orgId: await organizationOfKey({ ctx, keyId }), keyId }),
      );
      print(opts.json, { key }, () => [`Revoked key ${key.id}.`]);
    });

  program
    .command('worker')
    .summary('Run the background work only: folding stage, webhook delivery, scheduler')
    .description(
      'Run the background work without HTTP: the folding stage (report rollups, usage and the webhook messages of tracked events), the webhook delivery worker and the scheduler (digests, e-mail)',
    )
    .addHelpText(
      'after',
      [
        '',
        'Without a folding stage running somewhere, tracked events are never folded: their webhooks are never',
        'sent and reports read them raw, ever more slowly. A deployment whose `tally serve` processes all run',
        'with TALLY_ROLE=api needs at least one `tally worker`.',
      ].join('\n'),
    )
    .action(() => runUntilSignal({ ...loadConfig(), role: 'worker' }, 'finishing deliveries in flight'));

  registerBudgetCommands(program, withCtx);
  registerPeriodCommands(program, withCtx);

  const digests = program.command('digests').description('Weekly digest webhooks');
  digests
    .command('send')
    .description(
      'Queue the weekly digest of the week due at --at (default now) for every current subscriber, and make one delivery pass',
    )
    .option('--at <iso>', 'act as if it were this time (RFC 3339)')
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { at?: string; json: boolean }) => {
      const at = opts.at === undefined ? null : rfc3339(opts.at, '--at');
      // A later time would send a week that has not ended and mark it sent for good.
      if (at !== null && at.getTime() > Date.now())
        throw new InvalidArgumentError('--at must not be in the future');
      const queued = await withCtx(
        async (ctx) => {
          const result = await queueDigestWeekAt({ ctx, at: at ?? ctx.clock.now() });
          // Deliver now with the real clock, but without the scheduler's own pass: it would queue
          // the week due by the real clock too. What fails stays queued for the running workers.
          const worker = new DeliveryWorker(ctx);
          try {
            await worker.deliverOnce();
          } finally {
            await worker.stop();
          }
          return result;
        },
        { secrets: true },
      );
      print(opts.json, { queued }, () =>
        queued.length === 0
          ? ['no digest was due (or every due digest was already sent)']
          : queued.map((q) => `queued ${q.message_id} for ${q.webhook_id} (week of ${q.week})`),
      );
    });

  registerOtlpCommands(program, withCtx);

  const members = membersGroup(program);
  registerMemberCommands(members, withCtx);
  registerCreateOwnerCommand(members, withCtx);

  const secrets = program
    .command('secrets')
    .description('Secrets stored encrypted (webhook signing secrets, single sign-on client secrets)');
  secrets
    .command('rotate')
    .description(
      'Encrypt every stored secret with TALLY_SECRET_KEY (what older keys in TALLY_SECRET_KEY_PREVIOUS sealed, and any still in plaintext)',
    )
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { json: boolean }) => {
      const counts = await withCtx(
        async (ctx) => {
          const webhooks = await resealWebhookSecrets(ctx, { only: 'all' });
          // Single sign-on client secrets too; `unreadable` names them sso:<org id>.
          const sso = await resealSsoSecrets(ctx);
          return {
            key_id: ctx.config.secretBox?.keyId ?? null,
            sealed: webhooks.sealed + sso.sealed,
            unreadable: [...webhooks.unreadable, ...sso.unreadable],
          };
        },
        { secrets: true },
      );
      print(opts.json, counts, () => [
        `${counts.sealed} secrets (webhook signing, single sign-on client) sealed with key ${String(counts.key_id)}.`,
        ...(counts.unreadable.length > 0
          ? [
              `${counts.unreadable.length} could not be opened (their key is not configured): ${counts.unreadable.join(', ')}`,
            ]
          : []),
      ]);
      // Rows left under a key that is not configured: the old key cannot be dropped yet.
      if (counts.unreadable.length > 0) process.exitCode = 1;
    });

  return program;
}
