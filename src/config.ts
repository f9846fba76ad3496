import { readFileSync } from 'node:fs';
import { parsePlanTable, type PlanTable, DEFAULT_PLANS } from './billing/plans.js';
import { parseSecretKey, SecretBox } from './crypto/secret-box.js';

export type Role = 'api' | 'worker' | 'all';

export interface Config {
  databaseUrl: string;
  host: string;
  port: number;
  logLevel: string;
  role: Role;
  redisUrl: string | null;
  smtpUrl: string | null;
  emailFrom: string;
  plans: PlanTable;
  webhookRetryDelaysSeconds: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivateNetworks: boolean;
  /** Bounds on every wait for the database, so an outage answers 503 instead of hanging. */
  database: DatabaseTimeouts;
  /** How long a rate-limit check waits for Redis before letting the request through. */
  redisTimeoutMs: number;
  http: HttpTimeouts;
  /** After this long, shutdown closes the connections still open and exits. */
  shutdownTimeoutMs: number;
  /**
   * Events a folding pass takes at most (TALLY_FOLD_BATCH); null: the engine's default
   * (fold/pass.ts FOLD_BATCH). Larger passes fold a backlog sooner; on SQLite the main file's other
   * writes wait for each pass.
   */
  foldBatch: number | null;
  /**
   * A batch of POST /v1/track/batch waits while the folding stage is more than this many seconds
   * behind (TALLY_INGEST_MAX_LAG_SECONDS; fold/ingest-gate.ts); 0: it never waits.
   */
  ingestMaxLagSeconds: number;
  /**
   * How long GenAI spans wait in the database for the rest of their trace before the sweeper
   * settles them (TALLY_OTLP_HOLD_SECONDS; docs/opentelemetry.md).
   */
  otlpHoldSeconds: number;
  /**
   * Encrypts webhook signing secrets at rest (TALLY_SECRET_KEY, and TALLY_SECRET_KEY_PREVIOUS
   * for opening what older keys sealed). Null when unset: start-up then uses a key file beside a
   * SQLite database, or stops (crypto/secret-keys.ts).
   */
  secretBox: SecretBox | null;
  /**
   * Where people reach this service (TALLY_PUBLIC_URL; default http://HOST:PORT): the dashboard
   * and unsubscribe links of e-mails.
   */
  publicUrl: string;
  /** How often the worker re-evaluates budget and usage alerts (TALLY_ALERT_CHECK_SECONDS). */
  alertCheckSeconds: number;
  /**
   * Whether an admin API key may sign in to the dashboard (TALLY_DASHBOARD_KEY_SIGN_IN): `on`,
   * `off`, or `auto` (the default: only for an organisation that has no owner yet).
   */
  dashboardKeySignIn: KeySignIn;
}

export type KeySignIn = 'on' | 'off' | 'auto';

export interface DatabaseTimeouts {
  /** Opening a connection, and waiting for a free one in the pool. */
  connectTimeoutMs: number;
  /** One statement (PostgreSQL `statement_timeout`; the client gives up a second later). */
  statementTimeoutMs: number;
  /** `/readyz`'s own check. */
  readyTimeoutMs: number;
  /** SQLite: how long a write waits for another process's lock. */
  busyTimeoutMs: number;
}

export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = {
  connectTimeoutMs: 5_000,
  statementTimeoutMs: 10_000,
  readyTimeoutMs: 2_000,
  busyTimeoutMs: 5_000,
};

export interface HttpTimeouts {
  /** Receiving a whole request, headers and body. */
  requestTimeoutMs: number;
  /** Receiving the headers of a request. */
  headersTimeoutMs: number;
  /** An idle keep-alive connection between requests. */
  keepAliveTimeoutMs: number;
  /** A connection on which nothing moves in either direction while a request is open. */
  idleTimeoutMs: number;
}

/** Thrown for bad configuration; its message is the one line printed before exiting. */
export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function retryDelays(raw: string | undefined): number[] {
  if (raw === undefined || raw === '') return [0, 30, 120, 600, 3600];
  const parts = raw.split(',').map((p) => p.trim());
  const delays = parts.map(Number);
  if (delays.length === 0 || delays.length > 20 || delays.some((d) => !Number.isFinite(d) || d < 0)) {
    throw new ConfigError(
      `TALLY_WEBHOOK_RETRY_DELAYS must be a comma-separated list of 1 to 20 non-negative seconds, got "${raw}"`,
    );
  }
  return delays;
}

function plans(env: Env): PlanTable {
  const file = env.TALLY_PLANS_FILE;
  if (file === undefined || file === '') return DEFAULT_PLANS;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`TALLY_PLANS_FILE cannot be read: ${(error as Error).message}`);
  }
  try {
    return parsePlanTable(JSON.parse(text));
  } catch (error) {
    throw new ConfigError(`TALLY_PLANS_FILE is invalid: ${(error as Error).message}`);
  }
}

const KEY_HINT = '32 random bytes in base64 (e.g. the output of `openssl rand -base64 32`)';

/** One key, or a comma-separated list; the message never repeats a value (it is a secret). */
function secretKeys(env: Env, name: string): Buffer[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((text, i, all) => {
    const key = parseSecretKey(text);
    if (key === null) {
      const which = all.length > 1 ? ` (entry ${i + 1} of ${all.length})` : '';
      throw new ConfigError(`${name}${which} must be ${KEY_HINT}`);
    }
    return key;
  });
}

function secretBox(env: Env): SecretBox | null {
  const current = secretKeys(env, 'TALLY_SECRET_KEY');
  const previous = secretKeys(env, 'TALLY_SECRET_KEY_PREVIOUS');
  const [key, ...more] = current;
  if (key === undefined) {
    if (previous.length > 0) {
      throw new ConfigError(
        'TALLY_SECRET_KEY_PREVIOUS is set but TALLY_SECRET_KEY is not: set the current key too',
      );
    }
    return null;
  }
  if (more.length > 0) throw new ConfigError(`TALLY_SECRET_KEY must be one key, ${KEY_HINT}`);
  return new SecretBox(key, previous);
}

function keySignIn(raw: string | undefined): KeySignIn {
  if (raw === undefined || raw === '') return 'auto';
  if (raw === 'on' || raw === 'off' || raw === 'auto') return raw;
  throw new ConfigError(`TALLY_DASHBOARD_KEY_SIGN_IN must be on, off or auto, got "${raw}"`);
}

export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = env.TALLY_DATABASE_URL || 'sqlite:./data/tally.db';
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(databaseUrl)) {
    throw new ConfigError(`TALLY_DATABASE_URL must start with sqlite: or postgres://, got "${databaseUrl}"`);
  }
  const role = env.TALLY_ROLE || 'all';
  if (role !== 'api' && role !== 'worker' && role !== 'all') {
    throw new ConfigError(`TALLY_ROLE must be api, worker or all, got "${role}"`);
  }
  const portName = env.TALLY_PORT ? 'TALLY_PORT' : 'PORT';
  const logLevel = env.TALLY_LOG_LEVEL || 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(`TALLY_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent`);
  }
  const redisUrl = env.TALLY_REDIS_URL || null;
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError(`TALLY_REDIS_URL must start with redis:// or rediss://, got "${redisUrl}"`);
  }
  const smtpUrl = env.TALLY_SMTP_URL || null;
  if (smtpUrl !== null && !/^smtps?:\/\//.test(smtpUrl)) {
    throw new ConfigError(`TALLY_SMTP_URL must start with smtp:// or smtps://, got "${smtpUrl}"`);
  }
  const publicUrl = (env.TALLY_PUBLIC_URL || '').replace(/\/+$/, '');
  if (publicUrl !== '' && !/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(publicUrl)) {
    throw new ConfigError(`TALLY_PUBLIC_URL must be an http:// or https:// URL, got "${publicUrl}"`);
  }
  const requestTimeoutMs = integer(env, 'TALLY_HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  const headersTimeoutMs = integer(env, 'TALLY_HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      `TALLY_HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed TALLY_HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    );
  }
  return {
    databaseUrl,
    host: env.TALLY_HOST || '127.0.0.1',
    port: integer(env, portName, 8080, 0, 65535),
    logLevel,
    role,
    redisUrl,
    smtpUrl,
    emailFrom: env.TALLY_EMAIL_FROM || 'Tally <no-reply@tally.local>',
    plans: plans(env),
    webhookRetryDelaysSeconds: retryDelays(env.TALLY_WEBHOOK_RETRY_DELAYS),
    webhookTimeoutMs: integer(env, 'TALLY_WEBHOOK_TIMEOUT_MS', 10_000, 1, 600_000),
    webhookAllowPrivateNetworks: boolean(env, 'TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    database: {
      connectTimeoutMs: integer(
        env,
        'TALLY_DB_CONNECT_TIMEOUT_MS',
        DEFAULT_DATABASE_TIMEOUTS.connectTimeoutMs,
        100,
        600_000,
      ),
      statementTimeoutMs: integer(
        env,
        'TALLY_DB_STATEMENT_TIMEOUT_MS',
        DEFAULT_DATABASE_TIMEOUTS.statementTimeoutMs,
        100,
        3_600_000,
      ),
      readyTimeoutMs: integer(
        env,
        'TALLY_READYZ_TIMEOUT_MS',
        DEFAULT_DATABASE_TIMEOUTS.readyTimeoutMs,
        100,
        60_000,
      ),
      busyTimeoutMs: integer(
        env,
        'TALLY_SQLITE_BUSY_TIMEOUT_MS',
        DEFAULT_DATABASE_TIMEOUTS.busyTimeoutMs,
        0,
        600_000,
      ),
    },
    redisTimeoutMs: integer(env, 'TALLY_REDIS_TIMEOUT_MS', 300, 10, 60_000),
    http: {
      requestTimeoutMs,
      headersTimeoutMs,
      keepAliveTimeoutMs: integer(env, 'TALLY_HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
      idleTimeoutMs: integer(env, 'TALLY_HTTP_IDLE_TIMEOUT_MS', 60_000, 100, 3_600_000),
    },
    shutdownTimeoutMs: integer(env, 'TALLY_SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
    foldBatch:
      env.TALLY_FOLD_BATCH === undefined || env.TALLY_FOLD_BATCH === ''
        ? null
        : integer(env, 'TALLY_FOLD_BATCH', 0, 1, 10_000_000),
    ingestMaxLagSeconds: integer(env, 'TALLY_INGEST_MAX_LAG_SECONDS', 12, 0, 86_400),
    otlpHoldSeconds: integer(env, 'TALLY_OTLP_HOLD_SECONDS', 3_600, 1, 86_400),
    secretBox: secretBox(env),
    publicUrl:
      publicUrl || `http://${env.TALLY_HOST || '127.0.0.1'}:${integer(env, portName, 8080, 0, 65535)}`,
    alertCheckSeconds: integer(env, 'TALLY_ALERT_CHECK_SECONDS', 60, 1, 86_400),
    dashboardKeySignIn: keySignIn(env.TALLY_DASHBOARD_KEY_SIGN_IN),
  };
}
