import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Passwords are hashed with scrypt (memory-hard) and a per-password random salt. The stored text
 * names its parameters, so they can be raised later while old hashes still verify:
 * `scrypt$N$r$p$<salt base64url>$<hash base64url>`.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** scrypt needs 128·N·r bytes; Node's default cap (32 MiB) is exactly that at N=2^15, r=8. */
const MAX_MEMORY = 64 * 1024 * 1024;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, { ...options, maxmem: MAX_MEMORY }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join(
    '$',
  );
}

/** Whether `password` matches `stored`; false for a malformed stored text, never a throw. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, saltText, hashText, ...rest] = stored.split('$');
  if (scheme !== 'scrypt' || saltText === undefined || hashText === undefined || rest.length > 0)
    return false;
  const [N, R, P] = [n, r, p].map(Number);
  if (!Number.isSafeInteger(N) || !Number.isSafeInteger(R) || !Number.isSafeInteger(P)) return false;
  const expected = Buffer.from(hashText, 'base64url');
  if (expected.length !== KEY_BYTES) return false;
  try {
    const key = await derive(password, Buffer.from(saltText, 'base64url'), { N, r: R, p: P });
    return timingSafeEqual(key, expected);
  } catch {
    return false;
  }
}
