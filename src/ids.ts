import { randomBytes, randomInt } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

// Random bytes drawn 4 KiB at a time: one system call serves 256 ids on the hot path.
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let poolOffset = 0;

function randomChunk(length: number): Buffer {
  if (poolOffset + length > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    poolOffset = 0;
  }
  const chunk = pool.subarray(poolOffset, poolOffset + length);
  poolOffset += length;
  return chunk;
}

let lastTime = -1;
/** The time part of the last id, kept: ids made in one millisecond share it. */
let lastHead = '';
const lastRandom: number[] = new Array<number>(16).fill(0);

/**
 * A 26-character ULID: 48 bits of milliseconds, then 80 random bits; sorts by time. Within one
 * millisecond the random part counts up (monotonic ULID), so ids made in order sort in order.
 */
export function ulid(at: Date = new Date()): string {
  const time = at.getTime();
  if (time === lastTime) {
    let i = lastRandom.length - 1;
    while (i >= 0 && lastRandom[i] === 31) lastRandom[i--] = 0;
    if (i >= 0) lastRandom[i] = (lastRandom[i] ?? 0) + 1;
  } else {
    const bytes = randomChunk(16);
    for (let i = 0; i < 16; i++) lastRandom[i] = (bytes[i] ?? 0) % 32;
    lastTime = time;
    lastHead = '';
    for (let i = 0, rest = time; i < 10; i++, rest = Math.floor(rest / 32)) {
      lastHead = (CROCKFORD[rest % 32] ?? '0') + lastHead;
    }
  }
  let tail = '';
  for (const digit of lastRandom) tail += CROCKFORD[digit] ?? '0';
  return lastHead + tail;
}

export type IdPrefix =
  | 'org'
  | 'evt'
  | 'wh'
  | 'whmsg'
  | 'whdel'
  | 'req'
  | 'aud'
  | 'mail'
  | 'bud'
  | 'fc'
  | 'rsch'
  | 'rcpt'
  | 'asv'
  | 'rst'
  | 'acct'
  | 'rev'
  | 'adj';

export function newId(prefix: IdPrefix, at?: Date): string {
  return `${prefix}_${ulid(at)}`;
}

/** Uniformly random characters from [A-Za-z0-9], for API keys. */
export function randomAlnum(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALNUM[randomInt(ALNUM.length)];
  return out;
}
