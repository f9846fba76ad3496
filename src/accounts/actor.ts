import type { Role } from './roles.js';

/**
 * Who a verb acts for: a signed-in person with their role in the organisation, an API key with
 * its scope (DESIGN §3) and the person who created it, or the operator (the CLI, the service's
 * own jobs). Carried by OrgCtx; checked by requireRole (authorize.ts).
 */
export type Actor =
  | { kind: 'person'; accountId: string; email: string; role: Role }
  | { kind: 'api_key'; keyId: string; scope: 'admin' | 'ingest'; createdByAccountId: string | null }
  | { kind: 'operator' };
