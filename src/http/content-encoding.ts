import { Transform, type Readable } from 'node:stream';
import { createGunzip, createInflate } from 'node:zlib';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/** The content codings a request body may arrive in, besides `identity`. */
export type BodyCoding = 'gzip' | 'deflate';

/** What a 415 for an unknown coding names in `Accept-Encoding` (RFC 9110 §15.5.16). */
export const ACCEPTED_BODY_CODINGS = 'gzip, deflate, identity';

/** How much zlib inflates at a time: the decoded body passes its limit by at most this much. */
const INFLATE_CHUNK_BYTES = 16 * 1024;

// A Map, not an object: a header naming `constructor` or `__proto__` must not find anything.
const CODINGS = new Map<string, BodyCoding | null>([
  ['identity', null],
  ['gzip', 'gzip'],
  ['x-gzip', 'gzip'],
  ['deflate', 'deflate'],
]);

/**
 * The coding of a body from its `Content-Encoding` (case-insensitive; `identity` or nothing is
 * none). A coding we cannot undo, or more than one, is 415: read as it is, the body would only be
 * refused later as not JSON, with the cause hidden.
 */
export function bodyCoding(header: string | undefined): BodyCoding | null {
  if (header === undefined) return null;
  const codings = header
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '');
  const unknown = codings.find((c) => !CODINGS.has(c));
  if (unknown !== undefined) {
    throw new AppError(
      'unsupported_media_type',
      `Content-Encoding ${JSON.stringify(unknown)} is not supported; send the body as gzip, deflate or identity.`,
    );
  }
  const applied = codings.flatMap((c) => CODINGS.get(c) ?? []);
  if (applied.length > 1) {
    throw new AppError(
      'unsupported_media_type',
      `Content-Encoding ${JSON.stringify(header)} applies more than one coding; send the body in one at most (gzip or deflate).`,
    );
  }
  return applied[0] ?? null;
}

/**
 * The decoded body, as Fastify's body reader expects a preParsing hook's stream: it passes on
 * what zlib inflates and counts both sides.
 */
export class DecodedBody extends Transform {
  /** Bytes of the body as sent: Fastify checks them against Content-Length. */
  receivedEncodedLength = 0;
  /** Bytes inflated so far. */
  decodedLength = 0;
  private start: (() => void) | null;

  constructor(
    start: () => void,
    private readonly limit: number,
    private readonly tooLarge: () => void,
  ) {
    super();
    this.start = start;
  }

  override _read(size: number): void {
    // The request is read once this stream is: a request answered without reading its body
    // (415 for its media type, a route that takes none) is left to Node, which discards it.
    const start = this.start;
    this.start = null;
    start?.();
    super._read(size);
  }

  override _transform(
    chunk: Buffer,
    _encoding: BufferEncoding,
    callback: (error?: null, data?: Buffer) => void,
  ) {
    this.decodedLength += chunk.length;
    if (this.decodedLength > this.limit) {
      callback();
      this.tooLarge();
      return;
    }
    callback(null, chunk);
  }
}

/**
 * `raw` decoded, failing with 413 `payload_too_large` as soon as the decoded body passes `limit`:
 * inflating stops there (a gzip bomb costs at most the limit and one chunk), and the rest of the
 * request is read and discarded. A body that does not decode is 400 `bad_request`. The limit is
 * the caller's, so a route with a larger body limit decodes up to its own.
 */
export function decodeBody(raw: Readable, coding: BodyCoding, limit: number): DecodedBody {
  const inflate =
    coding === 'gzip'
      ? createGunzip({ chunkSize: INFLATE_CHUNK_BYTES })
      : createInflate({ chunkSize: INFLATE_CHUNK_BYTES });
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      decoded.receivedEncodedLength += chunk.length;
      callback(null, chunk);
    },
  });
  let failed = false;
  const fail = (error: AppError) => {
    if (failed) return;
    failed = true;
    raw.unpipe(counted);
    // Flowing without a reader: what is left of the request arrives and is dropped, so the
    // connection can carry the answer (and the next request).
    raw.resume();
    inflate.destroy();
    decoded.destroy(error);
  };
  const decoded = new DecodedBody(
    () => raw.pipe(counted).pipe(inflate).pipe(decoded),
    limit,
    () => fail(new AppError('payload_too_large', 'The request body is too large once decompressed.')),
  );
  inflate.on('error', () =>
    fail(new AppError('bad_request', `The body is not valid ${coding} data (Content-Encoding: ${coding}).`)),
  );
  return decoded;
}

/** Whether the request has a body to read: a Content-Length above 0, or a chunked one. */
function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  if (length !== undefined) return length !== '0';
  return request.headers['transfer-encoding'] !== undefined;
}

/**
 * Every route reads bodies sent with `Content-Encoding: gzip` or `deflate`, each up to its own
 * body limit once decoded (Fastify's body reader checks the decoded bytes against it as well).
 */
export function registerBodyDecoding(app: FastifyInstance): void {
  app.addHook('preParsing', async (request, reply, payload) => {
    if (!hasBody(request)) return payload;
    let coding: BodyCoding | null;
    try {
      coding = bodyCoding(request.headers['content-encoding']);
    } catch (error) {
      reply.header('Accept-Encoding', ACCEPTED_BODY_CODINGS);
      throw error;
    }
    return coding === null ? payload : decodeBody(payload, coding, request.routeOptions.bodyLimit);
  });
}
