import { AppError, validationError } from '../errors.js';

/** Containers (objects and arrays) a JSON body may nest, outermost included (README "Limits"). */
export const MAX_BODY_DEPTH = 64;

interface Frame {
  keys: Set<string> | null;
  expectKey: boolean;
  lastKey: string | null;
  /** The key this object is the value of, in its parent object. */
  parentKey: string | null;
}

/** Index of the quote closing the string that opens at `start`, or -1. */
function stringEnd(text: string, start: number): number {
  let at = start + 1;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

/**
 * What JSON.parse accepts but a body must not hold, found in one pass over the text before any
 * recursive code sees the value: nesting deeper than MAX_BODY_DEPTH (422), a key twice in one
 * object (400: which value counts differs between parsers, RFC 8259 §4), and the prototype keys
 * `__proto__` and `constructor.prototype` (400, as Fastify's own parser answers them). The scan
 * is lenient with malformed text: JSON.parse reports that afterwards.
 */
function scan(text: string): void {
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      const end = stringEnd(text, i);
      if (end < 0) return;
      const top = stack[stack.length - 1];
      if (top?.keys && top.expectKey) {
        const raw = text.slice(i, end + 1);
        let key: string;
        try {
          key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        } catch {
          return;
        }
        if (top.keys.has(key)) {
          throw new AppError(
            'invalid_json',
            `The body repeats the key ${JSON.stringify(key)} in one object.`,
          );
        }
        if (key === '__proto__' || (key === 'prototype' && top.parentKey === 'constructor')) {
          throw new AppError('invalid_json', `The body uses the reserved key ${JSON.stringify(key)}.`);
        }
        top.keys.add(key);
        top.expectKey = false;
        top.lastKey = key;
      }
      i = end;
    } else if (c === 123 || c === 91) {
      const parent = stack[stack.length - 1];
      stack.push({
        keys: c === 123 ? new Set() : null,
        expectKey: c === 123,
        lastKey: null,
        parentKey: parent?.keys ? parent.lastKey : null,
      });
      if (stack.length > MAX_BODY_DEPTH) {
        throw validationError('/body', `must not nest deeper than ${MAX_BODY_DEPTH} levels`);
      }
    } else if (c === 125 || c === 93) {
      stack.pop();
    } else if (c === 44) {
      const top = stack[stack.length - 1];
      if (top?.keys) top.expectKey = true;
    }
  }
}

/** Fastify's JSON body parser, with the checks of `scan` first. */
export function parseJsonBody(text: string): unknown {
  if (text === '') throw new AppError('invalid_json', 'The body is empty; send a JSON object.');
  scan(text);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError('invalid_json', 'The body is not valid JSON.');
  }
}
