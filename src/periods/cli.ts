import type { Command } from 'commander';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { print } from '../cli/output.js';
import { getOrganization } from '../orgs/organizations.js';
import { periodChanges } from './changes.js';
import { statementCsv } from './csv.js';
import type { Figures } from './figures.js';
import { closePeriod, getPeriod, listPeriods, reopenPeriod, type Statement } from './periods.js';

type WithCtx = <T>(fn: (ctx: ServiceCtx) => Promise<T>) => Promise<T>;

async function orgCtx(ctx: ServiceCtx, orgId: string): Promise<OrgCtx> {
  return { ...ctx, org: await getOrganization({ ctx, id: orgId }), actorKeyId: null };
}

function figures(f: Figures, currency: string): string {
  return `${f.events} events, ${f.hours_saved} h saved, ${f.net_saved} ${currency} net saved`;
}

function statementLines(s: Statement): string[] {
  return [
    `${s.month}: statement ${s.id}, closed ${s.closed_at} (${s.reason})${s.reopened_at ? `, reopened ${s.reopened_at} (${s.reopen_reason ?? ''})` : ''}`,
    `  total: ${figures(s.totals, s.currency)}`,
    ...s.by_agent.map((r) => `  agent ${r.agent_id ?? '(none)'}: ${figures(r, s.currency)}`),
  ];
}

/** `tally periods …`: the same verbs as /v1/periods, for an organisation named by id. */
export function registerPeriodCommands(program: Command, withCtx: WithCtx): void {
  const periods = program.command('periods').description('Closed months and their frozen statements');
  const json = ['--json', 'machine-readable output'] as const;

  periods
    .command('list')
    .description('List the months ever closed, with their status')
    .requiredOption('--org <id>', 'organisation id')
    .option(...json, false)
    .action(async (opts: { org: string; json: boolean }) => {
      const data = await withCtx(async (ctx) => listPeriods({ ctx: await orgCtx(ctx, opts.org) }));
      print(opts.json, { data }, () =>
        data.length === 0
          ? ['no closed months']
          : data.map((p) => `${p.month}  ${p.status}  closed ${p.closed_at}  ${p.reason}`),
      );
    });

  periods
    .command('close')
    .description('Close a month that has ended (UTC) and freeze its statement')
    .argument('<month>', 'YYYY-MM')
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--reason <text>', 'why it is closed')
    .option(...json, false)
    .action(async (month: string, opts: { org: string; reason: string; json: boolean }) => {
      const statement = await withCtx(async (ctx) =>
        closePeriod({ ctx: await orgCtx(ctx, opts.org), month, reason: opts.reason }),
      );
      print(opts.json, { statement }, () => ['Closed.', ...statementLines(statement)]);
    });

  periods
    .command('reopen')
    .description('Reopen a closed month; its statement stays in the history')
    .argument('<month>', 'YYYY-MM')
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--reason <text>', 'why it is reopened (audited)')
    .option(...json, false)
    .action(async (month: string, opts: { org: string; reason: string; json: boolean }) => {
      const statement = await withCtx(async (ctx) =>
        reopenPeriod({ ctx: await orgCtx(ctx, opts.org), month, reason: opts.reason }),
      );
      print(opts.json, { statement }, () => ['Reopened.', ...statementLines(statement)]);
    });

  periods
    .command('statement')
    .description("Print a month's statement (JSON, CSV or lines), or what changed since with --changes")
    .argument('<month>', 'YYYY-MM')
    .requiredOption('--org <id>', 'organisation id')
    .option('--csv', 'the statement as CSV', false)
    .option('--changes', 'what changed since the statement: the difference and its entries', false)
    .option(...json, false)
    .action(async (month: string, opts: { org: string; csv: boolean; changes: boolean; json: boolean }) => {
      if (opts.changes) {
        const changes = await withCtx(async (ctx) =>
          periodChanges({ ctx: await orgCtx(ctx, opts.org), month }),
        );
        print(opts.json, changes, () => [
          `${month}: statement ${changes.statement_id} closed ${changes.closed_at}`,
          `  statement: ${figures(changes.statement, changes.currency)}`,
          `  live:      ${figures(changes.live.totals, changes.currency)}`,
          `  change:    ${figures(changes.difference.totals, changes.currency)}`,
          ...changes.entries.map(
            (e) => `  ${e.kind} ${e.event_id} at ${e.at}: ${figures(e, changes.currency)}`,
          ),
        ]);
        return;
      }
      const period = await withCtx(async (ctx) => getPeriod({ ctx: await orgCtx(ctx, opts.org), month }));
      if (opts.csv) process.stdout.write(statementCsv(period));
      else print(opts.json, period, () => [`status: ${period.status}`, ...statementLines(period)]);
    });
}
