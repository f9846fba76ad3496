import { readFileSync } from 'node:fs';
import { parsePlanTable, type PlanTable, DEFAULT_PLANS } from './billing/plans.js';

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
  /**
   * Each track call folds the events it committed before it answers (TALLY_FOLD_INLINE=true):
   * for tests that read the derived tables right after tracking. Off in production, where the
   * folding stage runs on its own (fold.ts, DESIGN §11).
   */
  foldInline: boolean;
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
    foldInline: boolean(env, 'TALLY_FOLD_INLINE', false),
  };
}
