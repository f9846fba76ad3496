import type { ErrorDetail } from '../errors.js';

/**
 * NUL, which PostgreSQL's text and jsonb cannot hold, and UTF-16 surrogates without their pair,
 * which have no UTF-8 form (stored as U+FFFD on one engine, refused by jsonb on the other).
 */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
export const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

const MAX_ISSUES = 20;

/** `key` as a JSON pointer segment; `unstorable` is UNSTORABLE's verdict on it. */
function pointerPart(key: string, unstorable: boolean): string {
  // Every header and body key of every request comes through here: most need no change.
  if (!unstorable && !key.includes('~') && !key.includes('/')) return key;
  const readable = unstorable ? key.replace(UNSTORABLE_ALL, '\uFFFD') : key;
  return readable.replaceAll('~', '~0').replaceAll('/', '~1');
}

/**
 * Strings (keys included) both engines cannot store as sent, and numbers that are not finite
 * (`1e400` parses to Infinity), anywhere in a request part: the same 422 on SQLite and
 * PostgreSQL instead of a 500 from one of them. Iterative: the depth of a body is bounded by its
 * parser, the walk itself never recurses. `path` is the part's JSON pointer (`/body`).
 */
export function unstorableIssues(value: unknown, path: string): ErrorDetail[] {
  const issues: ErrorDetail[] = [];
  const pending: Array<[unknown, string]> = [[value, path]];
  while (pending.length > 0 && issues.length < MAX_ISSUES) {
    const [item, at] = pending.pop() as [unknown, string];
    if (typeof item === 'string') {
      if (UNSTORABLE.test(item)) {
        issues.push({ path: at, message: 'must not contain NUL characters or unpaired UTF-16 surrogates' });
      }
    } else if (typeof item === 'number') {
      if (!Number.isFinite(item)) issues.push({ path: at, message: 'must be a finite number' });
    } else if (Array.isArray(item)) {
      item.forEach((element, i) => pending.push([element, `${at}/${i}`]));
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, element] of Object.entries(item)) {
        const unstorable = UNSTORABLE.test(key);
        const keyPath = `${at}/${pointerPart(key, unstorable)}`;
        if (unstorable) {
          issues.push({
            path: keyPath,
            message: 'is a key with NUL characters or unpaired UTF-16 surrogates',
          });
        }
        pending.push([element, keyPath]);
      }
    }
  }
  return issues.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Nesting depth of a parsed JSON value (a scalar is 0), without recursion. */
export function nestingDepth(value: unknown): number {
  let deepest = 0;
  const pending: Array<[unknown, number]> = [[value, 0]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop() as [unknown, number];
    if (typeof item !== 'object' || item === null) continue;
    deepest = Math.max(deepest, depth + 1);
    for (const element of Object.values(item)) pending.push([element, depth + 1]);
  }
  return deepest;
}
