import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { validationError } from '../errors.js';

export const MIN_PASSWORD_LENGTH = 12;
/** scrypt of a longer text costs the same; the cap only keeps request bodies sane. */
export const MAX_PASSWORD_LENGTH = 256;

/**
 * The shipped list (common-passwords.txt). Under tsx it sits beside this module; `tsc` does not
 * copy it to dist/, so the built service reads it from src/accounts of the same checkout.
 */
function listPath(): string {
  const here = fileURLToPath(new URL('./common-passwords.txt', import.meta.url));
  if (existsSync(here)) return here;
  return fileURLToPath(new URL('../../src/accounts/common-passwords.txt', import.meta.url));
}

let common: Set<string> | null = null;

function commonPasswords(): Set<string> {
  if (common === null) {
    const lines = readFileSync(listPath(), 'utf8').split('\n');
    common = new Set(lines.filter((line) => line !== '' && !line.startsWith('#')));
  }
  return common;
}

/**
 * Whether a password is on the list, as given or with the digits and symbols people append
 * (`Password2026!`) taken off its end: the list's long entries are few, its short ones many.
 */
export function isCommonPassword(password: string): boolean {
  const list = commonPasswords();
  const lower = password.toLowerCase();
  if (list.has(lower)) return true;
  const stem = lower.replace(/[^a-z]+$/u, '');
  return stem !== lower && stem.length > 0 && list.has(stem);
}

/**
 * Why `password` may not be used for the account `email`, or null: at least 12 characters, not
 * the e-mail (nor its local part), not among the 10,000 most common passwords (isCommonPassword).
 */
export function passwordProblem(password: string, email: string): string | null {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return `The password needs at least ${MIN_PASSWORD_LENGTH} characters.`;
  if (length > MAX_PASSWORD_LENGTH) return `The password may have at most ${MAX_PASSWORD_LENGTH} characters.`;
  const lower = password.trim().toLowerCase();
  const address = email.trim().toLowerCase();
  if (lower === address || lower === address.split('@')[0]) {
    return 'The password may not be your e-mail address.';
  }
  if (isCommonPassword(password)) return 'That password is among the most common ones; choose another.';
  return null;
}

/** Throws 422 validation_error at `path` when the password breaks the policy. */
export function checkPassword(password: string, email: string, path = '/password'): void {
  const problem = passwordProblem(password, email);
  if (problem !== null) throw validationError(path, problem);
}
