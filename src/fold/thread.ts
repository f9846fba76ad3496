import { once } from 'node:events';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ServiceCtx } from '../context.js';
import type { Db } from '../storage/db.js';
import type { FoldOptions, FoldResult } from './pass.js';
import type { PassReply, PassRequest } from './thread-worker.js';

const require = createRequire(import.meta.url);

/** The thread's first script: tsx when running from the sources, then thread-worker. */
const WORKER_BOOT = `
  const { workerData } = require('node:worker_threads');
  (async () => {
    if (workerData.tsx !== null) (await import(workerData.tsx)).register();
    await import(workerData.entry);
  })();`;

/** A pass that failed in the folding thread, with the error's code (isUnavailableError reads it). */
export class FoldThreadError extends Error {
  constructor(
    readonly code: unknown,
    message: string,
    name: string,
    stack: string | undefined,
  ) {
    super(message);
    this.name = name;
    if (stack !== undefined) this.stack = stack;
  }
}

/**
 * The folding stage's passes on a SQLite file, run in a thread of its own (thread-worker.ts) on a
 * second write connection. better-sqlite3 runs every statement on the thread that calls it, so
 * a pass in the main thread kept tracking's JSON parsing, validation and HTTP work waiting for
 * the pass's SQL, on one core; in a thread, the two run side by side.
 *
 * SQLite has one writer per file. A pass writes the main file; track batches write the events
 * file on a connection of their own (storage/events-file.ts), so they commit while the thread
 * folds. The rest of the main thread's writes (webhook deliveries, settings, keys) are in the
 * main file: while the thread folds, the main thread holds its own write connection (Kysely's
 * connection lock) without using it, so they queue for it and none of them meets the thread's
 * write lock (which would block the event loop in SQLite's busy wait).
 *
 * The thread starts with the service (start), or else with the first pass, and again after it
 * dies; a pass under way when it dies fails (and is retried by the stage: its transaction never
 * committed).
 */
export class FoldThread {
  private worker: Worker | null = null;
  private ready: Promise<void> | null = null;
  private pending: { resolve(result: FoldResult): void; reject(error: unknown): void } | null = null;

  constructor(
    private readonly db: Db,
    private readonly url: string,
    private readonly config: ServiceCtx['config'],
  ) {}

  /** One pass in the thread, while this process's write connection waits for it. */
  async run(options: FoldOptions & { limit: number }): Promise<FoldResult> {
    if (
      options.beforeCommit !== undefined ||
      options.sqlFrom !== undefined ||
      options.messageChunk !== undefined
    ) {
      throw new Error('the folding thread takes a limit only');
    }
    await this.start();
    const request: PassRequest = { limit: options.limit };
    return this.db.connection().execute(
      () =>
        new Promise<FoldResult>((resolve, reject) => {
          const worker = this.worker;
          if (worker === null) {
            reject(new Error('the folding thread stopped'));
            return;
          }
          this.pending = { resolve, reject };
          worker.postMessage(request);
        }),
    );
  }

  /** Ends the thread (after the stage stopped: no pass is under way). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.ready = null;
    if (worker === null) return;
    const exited = once(worker, 'exit');
    worker.postMessage('close');
    const timer = setTimeout(() => void worker.terminate(), 5_000);
    await exited.catch(() => undefined);
    clearTimeout(timer);
  }

  /** Tests: the thread dies at once, as in a crash (a pass under way never commits). */
  async terminate(): Promise<void> {
    await this.worker?.terminate();
  }

  /**
   * Starts the thread (once; again after it died) and resolves when it is ready. The first pass
   * starts it too; a service starts it before it takes requests, so that the first events do not
   * wait for the thread's modules to load (half a second from the sources).
   */
  start(): Promise<void> {
    if (this.ready !== null) return this.ready;
    // From dist the thread runs the compiled thread-worker.js; from the sources (tests, tsx) it
    // registers tsx first (a worker does not inherit the loader of `--import tsx`).
    const sources = import.meta.url.endsWith('.ts');
    const entry = new URL(sources ? './thread-worker.ts' : './thread-worker.js', import.meta.url).href;
    const worker = new Worker(WORKER_BOOT, {
      eval: true,
      workerData: {
        entry,
        // tsx/esm/api as ECMAScript module (its CommonJS twin cannot register from here).
        tsx: sources ? pathToFileURL(require.resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href : null,
        url: this.url,
        config: this.config,
      },
    });
    this.worker = worker;
    const ready = new Promise<void>((resolve, reject) => {
      worker.on('message', (reply: PassReply) => {
        if (reply === 'ready') resolve();
        else this.settle(reply);
      });
      const gone = (error: Error) => {
        reject(error);
        if (this.worker === worker) this.gone(error);
      };
      worker.on('error', gone);
      worker.on('exit', (code) => gone(new Error(`the folding thread exited (code ${code})`)));
    });
    // A thread that dies before anyone waits for it must not be an unhandled rejection.
    ready.catch(() => undefined);
    this.ready = ready;
    return ready;
  }

  private settle(reply: Exclude<PassReply, 'ready'>): void {
    const pending = this.pending;
    this.pending = null;
    if (pending === null) return;
    if ('ok' in reply) pending.resolve(reply.ok);
    else {
      const { code, message, name, stack } = reply.error;
      pending.reject(new FoldThreadError(code, message, name, stack));
    }
  }

  /** The thread died: the pass under way fails, and the next one starts a new thread. */
  private gone(error: Error): void {
    this.worker = null;
    this.ready = null;
    const pending = this.pending;
    this.pending = null;
    pending?.reject(error);
  }
}

/** The folding thread of a SQLite file database, or null (PostgreSQL, or SQLite in memory). */
export function foldThreadFor(ctx: ServiceCtx, url: string, db: Db): FoldThread | null {
  if (ctx.engine !== 'sqlite' || !url.startsWith('sqlite:')) return null;
  const path = url.slice('sqlite:'.length);
  if (path === '' || path === ':memory:') return null;
  return new FoldThread(db, url, ctx.config);
}
