import type { Role } from '../../src/accounts/roles.js';
import { addMembership, createAccount, findAccountByEmail } from '../../src/accounts/store.js';
import type { Harness, TestOrg } from '../support/harness.js';

/** A person (created unless the e-mail has an account) with `role` in `org`. */
export async function addPerson(
  h: Harness,
  org: TestOrg,
  email: string,
  role: Role,
  name: string | null = null,
  password: string | null = null,
): Promise<string> {
  const account =
    (await findAccountByEmail(h.ctx, email)) ?? (await createAccount({ ctx: h.ctx, email, name, password }));
  await addMembership({ ctx: h.ctx, orgId: org.id, accountId: account.id, role });
  return account.id;
}
