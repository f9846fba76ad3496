/**
 * A person's role in one organisation. owner: everything, members and plan-related settings
 * included; admin: settings, API keys, webhooks, task types and baselines; analyst: reads every
 * figure, changes nothing. An organisation always keeps at least one owner.
 */
export const ROLES = ['owner', 'admin', 'analyst'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

const RANK: Record<Role, number> = { analyst: 0, admin: 1, owner: 2 };

/** Whether `role` may do what needs `needed` (owner ⊇ admin ⊇ analyst). */
export function roleAtLeast(role: Role, needed: Role): boolean {
  return RANK[role] >= RANK[needed];
}
