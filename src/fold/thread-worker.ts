import { parentPort, workerData } from 'node:worker_threads';
import { systemClock } from '../clock.js';
import type { Config } from '../config.js';
import { openStorage } from '../storage/db.js';
import { foldOnce, type FoldResult } from './pass.js';

/**
 * The folding thread of a SQLite file (thread.ts): folds one pass per message on a write
 * connection of its own, while the main thread holds its own write connection idle for it.
 */
export interface PassRequest {
  limit: number;
}

export type PassReply =
  { ok: FoldResult } | { error: { name: string; message: string; code?: unknown; stack?: string } } | 'ready';

const { url, config } = workerData as { url: string; config: Config };
const storage = openStorage(url, { timeouts: config.database, connectionOnly: true });
const ctx = { db: storage.db, engine: storage.engine, clock: systemClock, config };
const port = parentPort;
if (port === null) throw new Error('thread-worker.ts runs as a worker thread');

port.on('message', (request: PassRequest | 'close') => {
  if (request === 'close') {
    void storage.close().then(() => port.close());
    return;
  }
  foldOnce(ctx, { limit: request.limit }).then(
    (result) => port.postMessage({ ok: result } satisfies PassReply),
    (error: unknown) => {
      const e = error instanceof Error ? error : new Error(String(error));
      const code = (error as { code?: unknown } | null)?.code;
      port.postMessage({
        error: { name: e.name, message: e.message, code, stack: e.stack },
      } satisfies PassReply);
    },
  );
});
port.postMessage('ready' satisfies PassReply);
