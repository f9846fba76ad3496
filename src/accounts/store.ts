import type { ServiceCtx } from '../context.js';
import { AppError, validationError } from '../errors.js';
import { newId } from '../ids.js';
import type { AccountRow, MembershipRow } from '../storage/schema.js';
import { hashPassword } from './passwords.js';
import { checkPassword } from './password-policy.js';
import { isRole, type Role } from './roles.js';

// People: accounts identified by a lower-cased e-mail, and their memberships of organisations.

export interface Account {
  id: string;
  email: string;
  name: string | null;
  hasPassword: boolean;
  disabled: boolean;
  createdAt: number;
}

export interface Membership {
  orgId: string;
  orgName: string;
  accountId: string;
  role: Role;
  createdAt: number;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_EMAIL_LENGTH = 254;

/** The stored form of an e-mail: trimmed, lower-cased; 422 when it is not an address. */
export function normalizeEmail(email: string, path = '/email'): string {
  const value = email.trim().toLowerCase();
  if (value.length > MAX_EMAIL_LENGTH || !EMAIL.test(value)) {
    throw validationError(path, 'Give an e-mail address such as ana@example.com.');
  }
  return value;
}

export function accountFromRow(row: AccountRow): Account {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    hasPassword: row.password_hash !== null,
    disabled: row.disabled_at !== null,
    createdAt: Number(row.created_at),
  };
}

/** The account row of an e-mail (any case), or undefined. */
export async function findAccountRowByEmail(ctx: ServiceCtx, email: string): Promise<AccountRow | undefined> {
  const value = email.trim().toLowerCase();
  if (value === '' || value.length > MAX_EMAIL_LENGTH) return undefined;
  return ctx.db.selectFrom('accounts').selectAll().where('email', '=', value).executeTakeFirst();
}

export async function findAccountByEmail(ctx: ServiceCtx, email: string): Promise<Account | null> {
  const row = await findAccountRowByEmail(ctx, email);
  return row ? accountFromRow(row) : null;
}

export async function getAccount(ctx: ServiceCtx, accountId: string): Promise<Account | null> {
  const row = await ctx.db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
  return row ? accountFromRow(row) : null;
}

/**
 * Creates a person's account. The e-mail is lower-cased; a password, when given, must meet the
 * policy (password-policy.ts) and is stored as scrypt. An e-mail that already has an account
 * answers 422 validation_error at /email (callers look it up first).
 */
export async function createAccount({
  ctx,
  email,
  name,
  password,
}: {
  ctx: ServiceCtx;
  email: string;
  name?: string | null;
  password?: string | null;
}): Promise<Account> {
  const address = normalizeEmail(email);
  if (password !== undefined && password !== null) checkPassword(password, address);
  const passwordHash = password === undefined || password === null ? null : await hashPassword(password);
  const now = ctx.clock.now();
  const row: AccountRow = {
    id: newId('acct', now),
    email: address,
    name: name === undefined || name === null || name.trim() === '' ? null : name.trim(),
    password_hash: passwordHash,
    password_changed_at: passwordHash === null ? null : now.getTime(),
    disabled_at: null,
    created_at: now.getTime(),
    updated_at: now.getTime(),
  };
  const inserted = await ctx.db
    .insertInto('accounts')
    .values(row)
    .onConflict((oc) => oc.column('email').doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) {
    throw validationError('/email', 'That e-mail address already has an account.');
  }
  return accountFromRow(row);
}

/**
 * Sets a person's password (policy checked). Does not end sessions: the caller decides which
 * (sessions.ts endOtherSessions).
 */
export async function setPassword(ctx: ServiceCtx, account: Account, password: string): Promise<void> {
  checkPassword(password, account.email);
  const hash = await hashPassword(password);
  const now = ctx.clock.now().getTime();
  await ctx.db
    .updateTable('accounts')
    .set({ password_hash: hash, password_changed_at: now, updated_at: now })
    .where('id', '=', account.id)
    .execute();
}

function membershipFromRow(row: MembershipRow & { org_name: string }): Membership {
  if (!isRole(row.role)) throw new AppError('internal_error', `Unknown role ${row.role}.`);
  return {
    orgId: row.org_id,
    orgName: row.org_name,
    accountId: row.account_id,
    role: row.role,
    createdAt: Number(row.created_at),
  };
}

/**
 * Gives a person a role in an organisation; an existing membership takes the new role. Does not
 * check who may do this (the verbs do, with requireRole) nor the last owner (ensureOwnerRemains).
 */
export async function addMembership({
  ctx,
  orgId,
  accountId,
  role,
}: {
  ctx: ServiceCtx;
  orgId: string;
  accountId: string;
  role: Role;
}): Promise<void> {
  if (!isRole(role)) throw validationError('/role', 'The role is owner, admin or analyst.');
  const now = ctx.clock.now().getTime();
  await ctx.db
    .insertInto('memberships')
    .values({ org_id: orgId, account_id: accountId, role, created_at: now, updated_at: now })
    .onConflict((oc) => oc.columns(['org_id', 'account_id']).doUpdateSet({ role, updated_at: now }))
    .execute();
}

/** A person's memberships, by organisation name. */
export async function membershipsOf(ctx: ServiceCtx, accountId: string): Promise<Membership[]> {
  const rows = await ctx.db
    .selectFrom('memberships')
    .innerJoin('organizations', 'organizations.id', 'memberships.org_id')
    .selectAll('memberships')
    .select('organizations.name as org_name')
    .where('memberships.account_id', '=', accountId)
    .orderBy('organizations.name')
    .orderBy('memberships.org_id')
    .execute();
  return rows.map(membershipFromRow);
}

/** A person's membership of one organisation, or null. */
export async function membershipIn(
  ctx: ServiceCtx,
  orgId: string,
  accountId: string,
): Promise<Membership | null> {
  const row = await ctx.db
    .selectFrom('memberships')
    .innerJoin('organizations', 'organizations.id', 'memberships.org_id')
    .selectAll('memberships')
    .select('organizations.name as org_name')
    .where('memberships.org_id', '=', orgId)
    .where('memberships.account_id', '=', accountId)
    .executeTakeFirst();
  return row ? membershipFromRow(row) : null;
}

export async function ownerCount(ctx: ServiceCtx, orgId: string): Promise<number> {
  const row = await ctx.db
    .selectFrom('memberships')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('org_id', '=', orgId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The store's guard that an organisation keeps at least one owner: call it inside the
 * transaction that demotes or removes an owner's membership, after the change. 409 `last_owner`
 * when no owner would remain.
 */
export async function ensureOwnerRemains(ctx: ServiceCtx, orgId: string): Promise<void> {
  if ((await ownerCount(ctx, orgId)) === 0) {
    throw new AppError(
      'last_owner',
      'An organisation keeps at least one owner: make someone else owner first.',
    );
  }
}
