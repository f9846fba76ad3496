import type { FastifyRequest } from 'fastify';
import { AppError, type ErrorDetail } from '../errors.js';
import { validationDetails } from '../http/errors.js';
import { unstorableIssues } from '../http/storable.js';

const ITEM_PATH = /^\/events\/(\d+)(?:\/|$)/;

/**
 * DESIGN §4: in a batch, one bad event fails only itself. The route's schema checks the whole
 * body; an issue inside one event becomes that event's 422 (its paths `/body/events/<i>/…`),
 * while an issue of the envelope (no `events` array, too few or too many events) still fails the
 * request. Returns the issues of each invalid event by its index.
 */
export function batchItemIssues(
  error: FastifyRequest['validationError'],
  body: { events: readonly unknown[] },
): Map<number, ErrorDetail[]> {
  const byItem = new Map<number, ErrorDetail[]>();
  if (error) {
    const issues = (error as { validation?: Parameters<typeof validationDetails>[1] }).validation ?? [];
    if (issues.length === 0 || issues.some((issue) => !ITEM_PATH.test(issue.instancePath))) throw error;
    const grouped = new Map<number, typeof issues>();
    for (const issue of issues) {
      const index = Number(ITEM_PATH.exec(issue.instancePath)?.[1]);
      grouped.set(index, [...(grouped.get(index) ?? []), issue]);
    }
    for (const [index, itemIssues] of grouped) byItem.set(index, validationDetails('body', itemIssues));
  }
  // What the edge checks for every other body (storable.ts), event by event here.
  body.events.forEach((event, index) => {
    const unstorable = unstorableIssues(event, `/body/events/${index}`);
    if (unstorable.length > 0) byItem.set(index, [...unstorable, ...(byItem.get(index) ?? [])]);
  });
  return byItem;
}

/** The 422 of one invalid event, worded as a whole-body validation error is. */
export function invalidEvent(details: ErrorDetail[]): AppError {
  const first = details[0];
  return new AppError(
    'validation_error',
    first ? `Invalid event: ${first.path} ${first.message}.` : 'Invalid event.',
    details,
  );
}
