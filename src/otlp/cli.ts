import { InvalidArgumentError, Option, type Command } from 'commander';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { getOrganization } from '../orgs/organizations.js';
import { print } from '../cli/output.js';
import { createMappingRule, deleteMappingRule, listMappingRules, type MappingRuleInput } from './mappings.js';
import type { MappingRule } from './rules.js';
import { listUnresolvedRuns } from './unresolved.js';

type WithCtx = <T>(fn: (ctx: ServiceCtx) => Promise<T>) => Promise<T>;

const orgCtx = async (ctx: ServiceCtx, orgId: string): Promise<OrgCtx> => ({
  ...ctx,
  org: await getOrganization({ ctx, id: orgId }),
  actorKeyId: null,
});

function describeRule(rule: MappingRule): string {
  if (rule.kind === 'client_id') return `${rule.id}  client  from resource attribute ${rule.attribute ?? ''}`;
  const what =
    rule.field === 'resource_attribute' ? `resource attribute ${rule.attribute ?? ''}` : rule.field;
  return `${rule.id}  task_type  ${what} = ${rule.value ?? ''} → ${rule.task_type ?? ''}`;
}

/** `KEY=VALUE` of --resource-attribute. */
function keyValue(text: string): [string, string] {
  const at = text.indexOf('=');
  if (at <= 0 || at === text.length - 1) throw new InvalidArgumentError('must be KEY=VALUE');
  return [text.slice(0, at), text.slice(at + 1)];
}

/** `tally otlp mappings list|add|remove` and `tally otlp unresolved` (docs/opentelemetry.md). */
export function registerOtlpCommands(program: Command, withCtx: WithCtx): void {
  const otlp = program.command('otlp').description('OpenTelemetry ingest: mapping rules and unresolved runs');
  const mappings = otlp
    .command('mappings')
    .description('Rules from span attributes to task types and clients');

  mappings
    .command('list')
    .description("List the organisation's mapping rules, in the order they are tried")
    .requiredOption('--org <id>', 'organisation id')
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { org: string; json: boolean }) => {
      const rules = await withCtx(async (ctx) => listMappingRules({ ctx: await orgCtx(ctx, opts.org) }));
      print(opts.json, { data: rules }, () =>
        rules.length === 0 ? ['no mapping rules'] : rules.map(describeRule),
      );
    });

  mappings
    .command('add')
    .description(
      'Add a rule: one of --agent-name, --workflow-name, --span-name, --resource-attribute with --task-type; or --client-from',
    )
    .requiredOption('--org <id>', 'organisation id')
    .option('--agent-name <name>', 'runs whose gen_ai.agent.name is this')
    .option('--workflow-name <name>', 'runs whose gen_ai.workflow.name is this')
    .option('--span-name <name>', 'runs whose task span has this name')
    .option('--resource-attribute <key=value>', 'runs whose resource has this attribute value', keyValue)
    .option('--task-type <key>', 'the task type these runs get')
    .addOption(
      new Option('--client-from <attribute>', 'the resource attribute whose value is the run’s client'),
    )
    .option('--json', 'machine-readable output', false)
    .action(
      async (opts: {
        org: string;
        agentName?: string;
        workflowName?: string;
        spanName?: string;
        resourceAttribute?: [string, string];
        taskType?: string;
        clientFrom?: string;
        json: boolean;
      }) => {
        const matches = [
          opts.agentName === undefined ? null : ({ field: 'agent_name', value: opts.agentName } as const),
          opts.workflowName === undefined
            ? null
            : ({ field: 'workflow_name', value: opts.workflowName } as const),
          opts.spanName === undefined ? null : ({ field: 'span_name', value: opts.spanName } as const),
          opts.resourceAttribute === undefined
            ? null
            : ({
                field: 'resource_attribute',
                attribute: opts.resourceAttribute[0],
                value: opts.resourceAttribute[1],
              } as const),
        ].filter((m) => m !== null);
        let input: MappingRuleInput;
        if (opts.clientFrom !== undefined) {
          if (matches.length > 0 || opts.taskType !== undefined)
            throw new InvalidArgumentError('--client-from takes no match and no --task-type');
          input = { kind: 'client_id', attribute: opts.clientFrom };
        } else {
          const [match, ...more] = matches;
          if (!match || more.length > 0)
            throw new InvalidArgumentError(
              'give exactly one of --agent-name, --workflow-name, --span-name, --resource-attribute (or --client-from)',
            );
          if (opts.taskType === undefined) throw new InvalidArgumentError('--task-type is required');
          input = { kind: 'task_type', ...match, task_type: opts.taskType };
        }
        const { rule, resolvedRuns } = await withCtx(async (ctx) =>
          createMappingRule({ ctx: await orgCtx(ctx, opts.org), input }),
        );
        print(opts.json, { ...rule, resolved_runs: resolvedRuns }, () => [
          `Added ${describeRule(rule)}.`,
          ...(resolvedRuns > 0 ? [`Tracked ${resolvedRuns} unresolved run(s) it resolves.`] : []),
        ]);
      },
    );

  mappings
    .command('remove')
    .description('Delete a mapping rule (runs already tracked keep their task type)')
    .argument('<rule_id>', 'the rule id (map_…)')
    .requiredOption('--org <id>', 'organisation id')
    .option('--json', 'machine-readable output', false)
    .action(async (id: string, opts: { org: string; json: boolean }) => {
      const rule = await withCtx(async (ctx) => deleteMappingRule({ ctx: await orgCtx(ctx, opts.org), id }));
      print(opts.json, { rule }, () => [`Removed ${rule.id}.`]);
    });

  otlp
    .command('unresolved')
    .description('Runs received without a task type, newest first')
    .requiredOption('--org <id>', 'organisation id')
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { org: string; json: boolean }) => {
      const page = await withCtx(async (ctx) =>
        listUnresolvedRuns({ ctx: await orgCtx(ctx, opts.org), limit: 100 }),
      );
      print(opts.json, page, () =>
        page.data.length === 0
          ? ['no unresolved runs']
          : page.data.map(
              (r) => `${r.id}  ${r.occurred_at}  agent ${r.agent_id}  span ${r.span_name}  ${r.reason}`,
            ),
      );
    });
}
