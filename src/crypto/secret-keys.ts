import { linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { ConfigError, type Config } from '../config.js';
import { newSecretKey, parseSecretKey, SecretBox } from './secret-box.js';

/** The SQLite file of `databaseUrl`; null for PostgreSQL and for an in-memory database. */
function sqliteFile(databaseUrl: string): string | null {
  if (!databaseUrl.startsWith('sqlite:')) return null;
  const path = databaseUrl.slice('sqlite:'.length);
  return path === '' || path === ':memory:' ? null : path;
}

/** Where an embedded database keeps its generated key: `./data/tally.db` → `./data/tally.key`. */
export function keyFileOf(databaseFile: string): string {
  return join(dirname(databaseFile), `${basename(databaseFile, extname(databaseFile))}.key`);
}

function readKeyFile(file: string): Buffer {
  const key = parseSecretKey(readFileSync(file, 'utf8'));
  if (key === null)
    throw new ConfigError(
      `the key file ${file} does not hold 32 bytes in base64; restore it from where you keep it`,
    );
  if ((statSync(file).mode & 0o077) !== 0) {
    throw new ConfigError(`the key file ${file} can be read by other users; chmod 600 it`);
  }
  return key;
}

/**
 * The key file beside a SQLite database, created on first use (mode 0600). It is written whole
 * under a name of this process's, then linked into place, which fails if the file exists: two
 * processes starting together both end up reading the one that won, never a half-written one.
 */
function keyFileKey(file: string, announce: boolean): Buffer {
  const draft = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(draft, `${newSecretKey()}\n`, { mode: 0o600, flag: 'wx' });
    linkSync(draft, file);
    if (announce) {
      process.stderr.write(
        `Generated the key that encrypts secrets at rest: ${file} (mode 0600). Back it up apart from the database; set TALLY_SECRET_KEY to use a key of your own.\n`,
      );
    }
  } catch (error) {
    if ((error as { code?: string }).code !== 'EEXIST') {
      throw new ConfigError(`the key file ${file} cannot be created: ${(error as Error).message}`);
    }
  } finally {
    rmSync(draft, { force: true });
  }
  return readKeyFile(file);
}

function tryKeyFile(file: string): Buffer | null {
  try {
    return readKeyFile(file);
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * `config` with the box that seals webhook secrets (and every later secret at rest), as every
 * process that reads or writes them starts:
 * - TALLY_SECRET_KEY set: that key (TALLY_SECRET_KEY_PREVIOUS opening older rows). On SQLite a
 *   key file the quick start generated earlier still opens what it sealed, until
 *   `tally secrets rotate` has sealed those again.
 * - Unset, on a SQLite file (the embedded quick start): a key generated into a file beside the
 *   database, mode 0600, and used from then on. It guards dumps and copies of the database
 *   file; whoever copies the whole directory has both.
 * - Unset, on an in-memory SQLite database: a key for this process, which the data does not
 *   outlive either.
 * - Unset, on PostgreSQL: stops with one line saying how to set one (several instances must
 *   share it, so none may invent its own).
 */
export function withSecretBox(config: Config): Config {
  const file = sqliteFile(config.databaseUrl);
  if (config.secretBox) {
    const generated = file === null ? null : tryKeyFile(keyFileOf(file));
    return generated === null
      ? config
      : { ...config, secretBox: config.secretBox.withOpeningKeys([generated]) };
  }
  if (config.databaseUrl.startsWith('sqlite:')) {
    const key =
      file === null
        ? Buffer.from(newSecretKey(), 'base64')
        : keyFileKey(keyFileOf(file), config.logLevel !== 'silent');
    return { ...config, secretBox: new SecretBox(key) };
  }
  throw new ConfigError(
    'TALLY_SECRET_KEY is not set: it encrypts webhook signing secrets in the database; set it to 32 random bytes in base64 (e.g. `openssl rand -base64 32`), the same on every instance, and keep it out of the database backups',
  );
}
