import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** A key is 32 bytes: AES-256. */
export const SECRET_KEY_BYTES = 32;

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Sealed text starts with this; a later format gets a new one, and both stay readable. */
const FORMAT = 'tsb1';

/** A sealed secret that cannot be opened: its key is not configured, or it was altered. */
export class SecretBoxError extends Error {
  constructor(
    readonly reason: 'not_sealed' | 'unknown_key' | 'does_not_open',
    message: string,
  ) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

/** The id stored beside each ciphertext: a fingerprint of its key, which tells nothing of it. */
export function secretKeyId(key: Buffer): string {
  return createHash('sha256').update('tally secret key id\0').update(key).digest('hex').slice(0, 12);
}

/** A new random key, as the base64 text TALLY_SECRET_KEY takes. */
export function newSecretKey(): string {
  return randomBytes(SECRET_KEY_BYTES).toString('base64');
}

/** The key in base64 text (standard or URL-safe); null unless it is exactly 32 bytes. */
export function parseSecretKey(text: string): Buffer | null {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return null;
  const key = Buffer.from(trimmed, 'base64');
  return key.length === SECRET_KEY_BYTES ? key : null;
}

/**
 * Encrypts short secrets at rest (webhook signing secrets; single sign-on client secrets next)
 * with AES-256-GCM under the current key, and opens what any configured key sealed, so keys
 * can be rotated: seal with the new key, keep the old ones for opening until every row has been
 * sealed again (webhooks/secret-storage.ts).
 *
 * Sealed text is `tsb1.<key id>.<iv>.<ciphertext>.<tag>` (base64url parts): it names its key,
 * so a reader knows which one opens it. The `context` (e.g. `webhook:wh_…`) is authenticated
 * with it: a ciphertext copied into another row does not open there.
 */
export class SecretBox {
  /** The id of the key that seals. */
  readonly keyId: string;
  // A #private field: a copy of the config (structured clone, for a worker thread) leaves it out.
  readonly #keys: ReadonlyMap<string, Buffer>;

  /** `current` seals and opens; each of `previous` only opens. */
  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    for (const key of [current, ...previous]) {
      if (key.length !== SECRET_KEY_BYTES) throw new Error(`a secret key must be ${SECRET_KEY_BYTES} bytes`);
    }
    this.keyId = secretKeyId(current);
    const keys = new Map<string, Buffer>();
    for (const key of [...previous, current]) keys.set(secretKeyId(key), key);
    this.#keys = keys;
  }

  /** A box that also opens with `more` keys (which never seal). */
  withOpeningKeys(more: readonly Buffer[]): SecretBox {
    const current = this.#keys.get(this.keyId);
    if (current === undefined) throw new Error('the current key is missing');
    return new SecretBox(current, [...more, ...[...this.#keys.values()].filter((k) => k !== current)]);
  }

  /** Whether `keyId` names a key this box has. */
  opens(keyId: string): boolean {
    return this.#keys.has(keyId);
  }

  seal(plaintext: string, context: string): string {
    const key = this.#keys.get(this.keyId);
    if (key === undefined) throw new Error('the current key is missing');
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const parts = [iv, ciphertext, cipher.getAuthTag()].map((b) => b.toString('base64url'));
    return [FORMAT, this.keyId, ...parts].join('.');
  }

  /** The plaintext of `sealed`; SecretBoxError when it cannot be opened here. */
  open(sealed: string, context: string): string {
    const [format, keyId, iv, ciphertext, tag, ...rest] = sealed.split('.');
    if (
      format !== FORMAT ||
      keyId === undefined ||
      iv === undefined ||
      ciphertext === undefined ||
      tag === undefined ||
      rest.length > 0
    ) {
      throw new SecretBoxError('not_sealed', 'not a sealed secret');
    }
    const key = this.#keys.get(keyId);
    if (key === undefined) {
      throw new SecretBoxError('unknown_key', `sealed with key ${keyId}, which is not configured`);
    }
    try {
      const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, 'base64url'), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([
        decipher.update(Buffer.from(ciphertext, 'base64url')),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new SecretBoxError(
        'does_not_open',
        `sealed with key ${keyId}, but it does not open: altered, or moved from another row`,
      );
    }
  }

  /** The id of the key that sealed `sealed`; null when it is not sealed text. */
  static keyIdOf(sealed: string): string | null {
    const [format, keyId] = sealed.split('.');
    return format === FORMAT && keyId !== undefined ? keyId : null;
  }
}
