import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { eventsFilePath, EVENTS_SCHEMA } from './events-file.js';

const require = createRequire(import.meta.url);

/** How often the checkpoint thread of a SQLite file database checkpoints its WAL. */
const CHECKPOINT_EVERY_MS = 250;
/** The WAL size (in pages) at which the write connection checkpoints itself, as a backstop. */
export const BACKSTOP_CHECKPOINT_PAGES = 10_000;

/**
 * A worker thread with a connection of its own that runs `PRAGMA wal_checkpoint(PASSIVE)` on
 * the file every CHECKPOINT_EVERY_MS (a busy or failed one is simply tried again). It does not
 * keep the process alive. The thread's code is passed as text, so that it runs the same from
 * the sources (tests, tsx) and from dist.
 */
export function startCheckpointer(path: string): Worker {
  const source = `
    const { workerData } = require('node:worker_threads');
    const Database = require(workerData.driver);
    const database = new Database(workerData.path);
    database.pragma('busy_timeout = 0');
    database.prepare('ATTACH DATABASE ? AS ' + workerData.schema).run(workerData.events);
    setInterval(() => {
      try { database.pragma('wal_checkpoint(PASSIVE)'); } catch {}
    }, workerData.everyMs);`;
  const worker = new Worker(source, {
    eval: true,
    workerData: {
      driver: require.resolve('better-sqlite3'),
      path,
      events: eventsFilePath(path),
      schema: EVENTS_SCHEMA,
      everyMs: CHECKPOINT_EVERY_MS,
    },
  });
  // A thread that could not open the file (or died) leaves the backstop to checkpoint; its
  // error must not reach the process as an unhandled 'error' event.
  worker.on('error', () => undefined);
  worker.unref();
  return worker;
}
