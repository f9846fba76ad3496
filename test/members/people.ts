import type { Role } from '../../src/accounts/roles.js';
import { ulid } from '../../src/ids.js';
import type { Harness, TestOrg } from '../support/harness.js';

/** A person with a membership of `org`, written straight to the tables. */
export async function addPerson(
  h: Harness,
  org: TestOrg,
  email: string,
  role: Role,
  name: string | null = null,
): Promise<string> {
  const now = h.clock.now().getTime();
  const existing = await h.ctx.db
    .selectFrom('accounts')
    .select('id')
    .where('email', '=', email)
    .executeTakeFirst();
  const id = existing?.id ?? `acct_${ulid(h.clock.now())}`;
  if (!existing) {
    await h.ctx.db
      .insertInto('accounts')
      .values({
        id,
        email,
        name,
        password_hash: null,
        password_changed_at: null,
        disabled_at: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
  }
  await h.ctx.db
    .insertInto('memberships')
    .values({ org_id: org.id, account_id: id, role, created_at: now, updated_at: now })
    .execute();
  return id;
}
