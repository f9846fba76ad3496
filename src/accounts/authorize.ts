import type { OrgCtx } from '../context.js';
import { AppError } from '../errors.js';
import type { Actor } from './actor.js';
import { roleAtLeast, type Role } from './roles.js';

export type { Actor };

export const OPERATOR: Actor = { kind: 'operator' };

/** What the role check reads of a verb's context; a bare ServiceCtx (the CLI) is the operator. */
export type ActorCtx = Partial<Pick<OrgCtx, 'actor' | 'actorKeyId'>>;

/**
 * The actor of a verb context. A context built without one (the service's own jobs, older call
 * sites) acts as the operator when it names no key, and as an admin key when it names one: only
 * admin keys reach the verbs that change things (DESIGN §3).
 */
export function actorOf(ctx: ActorCtx): Actor {
  if (ctx.actor) return ctx.actor;
  if (ctx.actorKeyId === null || ctx.actorKeyId === undefined) return OPERATOR;
  return { kind: 'api_key', keyId: ctx.actorKeyId, scope: 'admin', createdByAccountId: null };
}

/** The role an actor acts with: an admin key as `admin`, the operator as `owner`; an ingest key none. */
export function roleOfActor(actor: Actor): Role | null {
  switch (actor.kind) {
    case 'person':
      return actor.role;
    case 'api_key':
      return actor.scope === 'admin' ? 'admin' : null;
    case 'operator':
      return 'owner';
  }
}

/** Whether the context's actor may do what needs `needed` (for hiding controls; verbs call requireRole). */
export function hasRole(ctx: ActorCtx, needed: Role): boolean {
  const role = roleOfActor(actorOf(ctx));
  return role !== null && roleAtLeast(role, needed);
}

/**
 * The one role check, called inside every verb that changes something. Throws 403
 * `insufficient_role` (a person's role is too low) or `insufficient_scope` (an ingest key).
 */
export function requireRole(ctx: ActorCtx, needed: Role): void {
  const actor = actorOf(ctx);
  const role = roleOfActor(actor);
  if (role === null) {
    throw new AppError(
      'insufficient_scope',
      'This ingest key may only track events, export traces and list task types.',
    );
  }
  if (!roleAtLeast(role, needed)) {
    const who = actor.kind === 'person' ? `Your role (${role})` : `An ${role} key`;
    throw new AppError('insufficient_role', `${who} may not do this; it needs the ${needed} role.`);
  }
}

/** The person behind an actor, for the audit log: the person, or the creator of the API key. */
export function actorAccountId(actor: Actor): string | null {
  if (actor.kind === 'person') return actor.accountId;
  if (actor.kind === 'api_key') return actor.createdByAccountId;
  return null;
}
