import { addMembership, createAccount, findAccountRowByEmail, membershipIn } from '../accounts/store.js';
import type { ServiceCtx } from '../context.js';
import { AppError } from '../errors.js';
import type { ProvisionedRole } from './connections.js';

export interface Provisioned {
  accountId: string;
  /** The account was created by this sign-in. */
  provisioned: boolean;
  /** The person became a member of the organisation by this sign-in. */
  membershipAdded: boolean;
}

/**
 * Just-in-time provisioning at a single sign-on: the account of `email` (created without a
 * password when there is none) and its membership of `orgId` (with `role` when it has none; an
 * existing membership keeps its role). 'disabled' when the account is disabled: nothing is
 * created for it.
 */
export async function provisionPerson({
  ctx,
  orgId,
  email,
  name,
  role,
}: {
  ctx: ServiceCtx;
  orgId: string;
  email: string;
  name: string | null;
  role: ProvisionedRole;
}): Promise<Provisioned | 'disabled'> {
  let row = await findAccountRowByEmail(ctx, email);
  let provisioned = false;
  if (!row) {
    try {
      await createAccount({ ctx, email, name });
      provisioned = true;
    } catch (error) {
      // Another sign-in of the same person created it a moment ago: use that one.
      if (!(error instanceof AppError && error.code === 'validation_error')) throw error;
    }
    row = await findAccountRowByEmail(ctx, email);
    if (!row)
      throw new AppError('validation_error', 'The identity provider’s e-mail address cannot be stored.');
  }
  if (row.disabled_at !== null) return 'disabled';
  const membership = await membershipIn(ctx, orgId, row.id);
  if (membership === null) await addMembership({ ctx, orgId, accountId: row.id, role });
  return { accountId: row.id, provisioned, membershipAdded: membership === null };
}
