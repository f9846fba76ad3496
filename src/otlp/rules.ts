import type { Attributes } from './spans.js';
import { attribute } from './spans.js';

/** What a task-type rule matches on: the run's agent or workflow name, its span's name, or a resource attribute. */
export const RULE_FIELDS = ['agent_name', 'workflow_name', 'span_name', 'resource_attribute'] as const;
export type RuleField = (typeof RULE_FIELDS)[number];

export type RuleKind = 'task_type' | 'client_id';

/** A mapping rule as the API shows it. */
export interface MappingRule {
  id: string;
  /** `task_type`: the run gets `task_type` when `field` (and `attribute`) equal `value`; `client_id`: the run's client is the resource attribute `attribute`. */
  kind: RuleKind;
  field: RuleField;
  attribute: string | null;
  value: string | null;
  task_type: string | null;
  created_at: string;
}

/** What rules match on, read from a run's task span and its resource. */
export interface RunFacts {
  agent_name: string | null;
  workflow_name: string | null;
  span_name: string;
  resource: Attributes;
}

/** Task-type rules are tried field by field in this order; within one field, the oldest first. */
const FIELD_ORDER: Record<RuleField, number> = {
  agent_name: 0,
  workflow_name: 1,
  span_name: 2,
  resource_attribute: 3,
};

function factOf(facts: RunFacts, rule: MappingRule): string | null {
  switch (rule.field) {
    case 'agent_name':
      return facts.agent_name;
    case 'workflow_name':
      return facts.workflow_name;
    case 'span_name':
      return facts.span_name;
    case 'resource_attribute': {
      const value = attribute(facts.resource, rule.attribute ?? '');
      return value === undefined ? null : String(value);
    }
  }
}

/** Rules in the order they are tried (the store lists them so). */
export function orderRules(rules: MappingRule[]): MappingRule[] {
  return [...rules].sort(
    (a, b) =>
      a.kind.localeCompare(b.kind) ||
      FIELD_ORDER[a.field] - FIELD_ORDER[b.field] ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}

/** The task type of the first task-type rule that matches, or null. `rules` in orderRules order. */
export function matchTaskType(rules: MappingRule[], facts: RunFacts): MappingRule | null {
  for (const rule of rules) {
    if (rule.kind === 'task_type' && rule.value !== null && factOf(facts, rule) === rule.value) return rule;
  }
  return null;
}

/** The client named by the first client rule whose resource attribute the run has, or null. */
export function matchClient(rules: MappingRule[], facts: RunFacts): string | null {
  for (const rule of rules) {
    if (rule.kind !== 'client_id') continue;
    const value = factOf(facts, rule);
    if (value !== null && value !== '') return value;
  }
  return null;
}
