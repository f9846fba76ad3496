import type { IncomingMessage, Server } from 'node:http';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

/** How long shutdown goes on accepting before it stops listening (at most half the shutdown timeout). */
const DRAIN_GRACE_MS = 500;
/** Event-loop turns shutdown waits, at most, for one in which no connection arrives. */
const MAX_QUIET_TURNS = 1_000;
/** How long a refusal during shutdown waits for the rest of its request's body. */
const BODY_DRAIN_MS = 2_000;

/**
 * Shutting down (Fastify's close): every request that reached the server is answered. Those
 * already running finish; those that arrive get a 503; each answer says `Connection: close`, so
 * keep-alive clients let go at once instead of holding close() until their keep-alive timeout.
 *
 * Fastify closes the server after its preClose hooks, and Node's `server.close()` stops
 * listening (the kernel then resets every connection still in the listen backlog) and destroys
 * each keep-alive connection with no request in progress (with any request bytes still unread in
 * it). Requests their clients had sent would meet a reset, not an answer. So the server first
 * goes on accepting and reading for a grace (requests still on the wire arrive), then until an
 * event-loop turn accepts no new connection: each turn's poll accepts the whole backlog and reads
 * whatever has arrived, so once a turn brings none, nothing sent earlier waits unread. A loaded
 * or starved process needs many more turns than the grace alone would give it.
 */
export function registerGracefulShutdown(app: FastifyInstance, shutdownTimeoutMs: number): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    // A batch waiting for the folding stage is stored now, before its connection is closed.
    app.ingestGate?.close();
    if (app.server.listening) {
      await sleep(Math.min(DRAIN_GRACE_MS, Math.floor(shutdownTimeoutMs / 2)));
      await untilQuiet(app.server);
    }
  });
  app.addHook('onRequest', async () => {
    if (closing) throw new AppError('service_unavailable', 'The server is shutting down; retry shortly.');
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (closing) {
      reply.header('Connection', 'close');
      // The connection ends after this answer: bytes of the request still unread then (a refusal
      // before its body was read) would turn that end into a reset, which can overtake the answer.
      await requestReceived(request.raw, BODY_DRAIN_MS);
    }
    return payload;
  });
}

/** Resolves after an event-loop turn in which no connection was accepted. */
async function untilQuiet(server: Server): Promise<void> {
  let accepted = 0;
  const count = () => accepted++;
  server.on('connection', count);
  try {
    for (let turn = 0; turn < MAX_QUIET_TURNS; turn++) {
      const before = accepted;
      // The turn's poll phase runs before its check phase, where setImmediate resolves.
      await nextTurn();
      if (accepted === before) return;
    }
  } finally {
    server.off('connection', count);
  }
}

/**
 * Resolves once the whole request has arrived (its unread body read and discarded), or after
 * `ms`.
 */
async function requestReceived(raw: IncomingMessage, ms: number): Promise<void> {
  if (raw.complete || raw.destroyed) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, ms);
    raw.once('end', done);
    raw.once('close', done);
    raw.resume();
  });
}
