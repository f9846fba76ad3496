import { InvalidArgumentError, Option, type Command } from 'commander';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { print } from '../cli/output.js';
import { getOrganization } from '../orgs/organizations.js';
import {
  BUDGET_SCOPES,
  createBudget,
  deleteBudget,
  listBudgets,
  updateBudget,
  type BudgetScope,
} from './budgets.js';
import { budgetViews, type BudgetView } from './status.js';

type WithCtx = <T>(fn: (ctx: ServiceCtx) => Promise<T>) => Promise<T>;

function amount(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n)) throw new InvalidArgumentError('must be a number');
  return n;
}

function thresholds(value: string): number[] {
  const list = value.split(',').map((t) => Number(t.trim()));
  if (list.some((t) => !Number.isInteger(t)))
    throw new InvalidArgumentError('must be whole percentages, e.g. 50,80,100');
  return list;
}

async function orgCtx(ctx: ServiceCtx, orgId: string): Promise<OrgCtx> {
  return { ...ctx, org: await getOrganization({ ctx, id: orgId }), actorKeyId: null };
}

function line(b: BudgetView): string {
  const scope = b.scope === 'org' ? 'org' : `${b.scope}=${b.scope_value ?? ''}`;
  const s = b.status;
  const runOut = s.run_out_date ? `, runs out ${s.run_out_date}` : '';
  return `${b.id}  ${b.name}  (${scope})  ${s.spend} of ${b.amount} ${b.currency} (${s.percent_used}%), forecast ${s.forecast}, ${s.state}${runOut}`;
}

/** `tally budgets …`: the same verbs as /v1/budgets, for an organisation named by id. */
export function registerBudgetCommands(program: Command, withCtx: WithCtx): void {
  const budgets = program.command('budgets').description('Monthly budgets on agent spend');
  const json = ['--json', 'machine-readable output'] as const;

  budgets
    .command('list')
    .description("List the organisation's budgets with their spend, forecast and state this month")
    .requiredOption('--org <id>', 'organisation id')
    .option(...json, false)
    .action(async (opts: { org: string; json: boolean }) => {
      const views = await withCtx(async (ctx) => {
        const org = await orgCtx(ctx, opts.org);
        return budgetViews({ ctx: org, budgets: (await listBudgets({ ctx: org, limit: 100 })).data });
      });
      print(opts.json, { data: views }, () => (views.length === 0 ? ['no budgets'] : views.map(line)));
    });

  budgets
    .command('create')
    .description('Create a monthly budget on agent spend')
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--name <name>', 'what the budget is for')
    .requiredOption('--amount <amount>', 'monthly agent spend allowed, in the organisation currency', amount)
    .addOption(new Option('--scope <scope>', 'what it counts').choices(BUDGET_SCOPES).default('org'))
    .option('--scope-value <value>', 'the agent id, client id or task type (not for org)')
    .option('--thresholds <list>', 'alert thresholds in percent (default 50,80,100)', thresholds)
    .option(...json, false)
    .action(
      async (opts: {
        org: string;
        name: string;
        amount: number;
        scope: BudgetScope;
        scopeValue?: string;
        thresholds?: number[];
        json: boolean;
      }) => {
        const [view] = await withCtx(async (ctx) => {
          const org = await orgCtx(ctx, opts.org);
          const budget = await createBudget({
            ctx: org,
            input: {
              name: opts.name,
              scope: opts.scope,
              amount: opts.amount,
              ...(opts.scopeValue === undefined ? {} : { scope_value: opts.scopeValue }),
              ...(opts.thresholds === undefined ? {} : { thresholds: opts.thresholds }),
            },
          });
          return budgetViews({ ctx: org, budgets: [budget] });
        });
        if (view) print(opts.json, { budget: view }, () => [`Created ${line(view)}`]);
      },
    );

  budgets
    .command('update')
    .description("Change a budget's name, amount or thresholds")
    .argument('<budget_id>', 'the budget')
    .requiredOption('--org <id>', 'organisation id')
    .option('--name <name>', 'a new name')
    .option('--amount <amount>', 'a new monthly amount', amount)
    .option('--thresholds <list>', 'new alert thresholds in percent', thresholds)
    .option(...json, false)
    .action(
      async (
        id: string,
        opts: { org: string; name?: string; amount?: number; thresholds?: number[]; json: boolean },
      ) => {
        const [view] = await withCtx(async (ctx) => {
          const org = await orgCtx(ctx, opts.org);
          const budget = await updateBudget({
            ctx: org,
            id,
            patch: {
              ...(opts.name === undefined ? {} : { name: opts.name }),
              ...(opts.amount === undefined ? {} : { amount: opts.amount }),
              ...(opts.thresholds === undefined ? {} : { thresholds: opts.thresholds }),
            },
          });
          return budgetViews({ ctx: org, budgets: [budget] });
        });
        if (view) print(opts.json, { budget: view }, () => [`Updated ${line(view)}`]);
      },
    );

  budgets
    .command('delete')
    .description('Delete a budget')
    .argument('<budget_id>', 'the budget')
    .requiredOption('--org <id>', 'organisation id')
    .option(...json, false)
    .action(async (id: string, opts: { org: string; json: boolean }) => {
      await withCtx(async (ctx) => deleteBudget({ ctx: await orgCtx(ctx, opts.org), id }));
      print(opts.json, { deleted: id }, () => [`Deleted ${id}.`]);
    });
}
