import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  newSecretKey,
  parseSecretKey,
  SecretBox,
  SecretBoxError,
  secretKeyId,
} from '../../src/crypto/secret-box.js';
import { keyFileOf, withSecretBox } from '../../src/crypto/secret-keys.js';

const run = promisify(execFile);
const keyA = Buffer.alloc(32, 1);
const keyB = Buffer.alloc(32, 2);

describe('SecretBox', () => {
  it('seals with AES-256-GCM: the plaintext is nowhere in the sealed text, which names its key', () => {
    const box = new SecretBox(keyA);
    const secret = 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0';
    const sealed = box.seal(secret, 'webhooks.secret:wh_1');
    expect(sealed).toMatch(/^tsb1\.[0-9a-f]{12}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toContain(secret.slice(6));
    expect(SecretBox.keyIdOf(sealed)).toBe(box.keyId);
    expect(box.keyId).toBe(secretKeyId(keyA));
    expect(box.open(sealed, 'webhooks.secret:wh_1')).toBe(secret);
    // A fresh IV each time: the same secret never seals to the same text.
    expect(box.seal(secret, 'webhooks.secret:wh_1')).not.toBe(sealed);
  });

  it('refuses a ciphertext moved to another row, altered, or sealed with a key it does not have', () => {
    const box = new SecretBox(keyA);
    const sealed = box.seal('whsec_x', 'webhooks.secret:wh_1');
    expect(() => box.open(sealed, 'webhooks.secret:wh_2')).toThrow(SecretBoxError);
    const parts = sealed.split('.');
    const flipped = parts[3]?.startsWith('A') ? `B${parts[3].slice(1)}` : `A${String(parts[3]).slice(1)}`;
    expect(() =>
      box.open([...parts.slice(0, 3), flipped, ...parts.slice(4)].join('.'), 'webhooks.secret:wh_1'),
    ).toThrow(SecretBoxError);
    expect(() => new SecretBox(keyB).open(sealed, 'webhooks.secret:wh_1')).toThrow(/not configured/);
    expect(() => box.open('whsec_x', 'webhooks.secret:wh_1')).toThrow(SecretBoxError);
  });

  it('rotates: opens with previous keys, seals only with the current one', () => {
    const old = new SecretBox(keyA).seal('whsec_old', 'c');
    const rotated = new SecretBox(keyB, [keyA]);
    expect(rotated.open(old, 'c')).toBe('whsec_old');
    const fresh = rotated.seal('whsec_new', 'c');
    expect(SecretBox.keyIdOf(fresh)).toBe(secretKeyId(keyB));
    expect(new SecretBox(keyB).open(fresh, 'c')).toBe('whsec_new');
    expect(rotated.withOpeningKeys([Buffer.alloc(32, 3)]).keyId).toBe(rotated.keyId);
  });

  it('keeps its keys out of a structured clone (the config a worker thread gets)', () => {
    const clone = structuredClone({ box: new SecretBox(keyA) });
    expect(JSON.stringify(clone)).not.toContain(keyA.toString('base64'));
    expect(Object.values(clone.box)).toEqual([secretKeyId(keyA)]);
  });
});

describe('TALLY_SECRET_KEY', () => {
  it('takes 32 bytes in base64 and TALLY_SECRET_KEY_PREVIOUS as a list', () => {
    const a = keyA.toString('base64');
    const b = keyB.toString('base64url');
    const config = loadConfig({ TALLY_SECRET_KEY: b, TALLY_SECRET_KEY_PREVIOUS: ` ${a} ,${newSecretKey()}` });
    expect(config.secretBox?.keyId).toBe(secretKeyId(keyB));
    expect(config.secretBox?.opens(secretKeyId(keyA))).toBe(true);
    expect(loadConfig({}).secretBox).toBeNull();
    expect(parseSecretKey(a)).toEqual(keyA);
  });

  it('stops with one line naming the variable, never repeating the value', () => {
    const short = Buffer.alloc(16, 9).toString('base64');
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ TALLY_SECRET_KEY: short }, /^TALLY_SECRET_KEY must be 32 random bytes in base64/],
      [{ TALLY_SECRET_KEY: 'not base64 at all!' }, /^TALLY_SECRET_KEY must be 32 random bytes/],
      [{ TALLY_SECRET_KEY: keyA.toString('hex') }, /^TALLY_SECRET_KEY must be 32 random bytes/],
      [{ TALLY_SECRET_KEY: `${newSecretKey()},${newSecretKey()}` }, /^TALLY_SECRET_KEY must be one key/],
      [
        { TALLY_SECRET_KEY: newSecretKey(), TALLY_SECRET_KEY_PREVIOUS: `${newSecretKey()},${short}` },
        /^TALLY_SECRET_KEY_PREVIOUS \(entry 2 of 2\) must be 32 random bytes/,
      ],
      [
        { TALLY_SECRET_KEY_PREVIOUS: newSecretKey() },
        /^TALLY_SECRET_KEY_PREVIOUS is set but TALLY_SECRET_KEY is not/,
      ],
    ];
    for (const [env, message] of cases) {
      let error: unknown;
      try {
        loadConfig(env);
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(env)).toBeInstanceOf(ConfigError);
      const text = (error as Error).message;
      expect(text).toMatch(message);
      expect(text).not.toContain('\n');
      for (const value of Object.values(env))
        for (const part of value.split(',')) expect(text).not.toContain(part);
    }
  });
});

describe('withSecretBox (start-up)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tally-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('stops on PostgreSQL without a key, with one line saying how to set one', () => {
    const config = loadConfig({ TALLY_DATABASE_URL: 'postgres://127.0.0.1:1/none' });
    expect(() => withSecretBox(config)).toThrow(ConfigError);
    expect(() => withSecretBox(config)).toThrow(/^TALLY_SECRET_KEY is not set: .*openssl rand -base64 32/);
  });

  it('generates a key file beside a SQLite database (mode 0600) and keeps using it', () => {
    const db = join(dir, 'quick', 'tally.db');
    expect(keyFileOf(db)).toBe(join(dir, 'quick', 'tally.key'));
    const config = loadConfig({ TALLY_DATABASE_URL: `sqlite:${db}` });
    const first = withSecretBox(config).secretBox;
    const file = keyFileOf(db);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(parseSecretKey(readFileSync(file, 'utf8'))).not.toBeNull();
    const again = withSecretBox(config).secretBox;
    expect(again?.keyId).toBe(first?.keyId);
    const sealed = first?.seal('whsec_q', 'c') ?? '';
    expect(again?.open(sealed, 'c')).toBe('whsec_q');

    // Moving to a key of one's own: the generated one still opens what it sealed (until rotated).
    const own = withSecretBox(
      loadConfig({ TALLY_DATABASE_URL: `sqlite:${db}`, TALLY_SECRET_KEY: newSecretKey() }),
    );
    expect(own.secretBox?.keyId).not.toBe(first?.keyId);
    expect(own.secretBox?.open(sealed, 'c')).toBe('whsec_q');
  });

  it('gives processes starting together on a new database one key file, never a half-written one', async () => {
    const db = join(dir, 'race', 'tally.db');
    const script = `
      import { loadConfig } from './src/config.ts';
      import { withSecretBox } from './src/crypto/secret-keys.ts';
      const box = withSecretBox(loadConfig({ TALLY_DATABASE_URL: ${JSON.stringify(`sqlite:${db}`)}, TALLY_LOG_LEVEL: 'silent' })).secretBox;
      process.stdout.write(box.keyId);`;
    const ids = await Promise.all(
      Array.from({ length: 6 }, () =>
        run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]).then((r) => r.stdout),
      ),
    );
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toBe(secretKeyId(parseSecretKey(readFileSync(keyFileOf(db), 'utf8')) ?? Buffer.alloc(0)));
    expect(readdirSync(dirname(db))).toEqual(['tally.key']);
  }, 60_000);

  it('refuses a key file others can read, or one that holds no key', () => {
    const db = join(dir, 'loose', 'tally.db');
    const config = loadConfig({ TALLY_DATABASE_URL: `sqlite:${db}` });
    withSecretBox(config);
    chmodSync(keyFileOf(db), 0o644);
    expect(() => withSecretBox(config)).toThrow(/can be read by other users; chmod 600/);
    writeFileSync(keyFileOf(db), 'garbage\n', { mode: 0o600 });
    chmodSync(keyFileOf(db), 0o600);
    expect(() => withSecretBox(config)).toThrow(/does not hold 32 bytes/);
  });

  it('gives an in-memory database a key of its own process', () => {
    const box = withSecretBox(loadConfig({ TALLY_DATABASE_URL: 'sqlite::memory:' })).secretBox;
    expect(box?.keyId).toMatch(/^[0-9a-f]{12}$/);
  });
});
