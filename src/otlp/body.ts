import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { decodeJsonExport, decodeProtobufExport, OtlpDecodeError, type DecodedExport } from './decode.js';

/**
 * Bytes of an export, decompressed (the shared body decoding, http/content-encoding.ts, stops a
 * gzip body as soon as it inflates past this). The OpenTelemetry Collector's default; exporters
 * batch up to 512 spans, and prompts recorded on spans make them large.
 */
export const OTLP_BODY_LIMIT_BYTES = 20 * 1024 * 1024;

export const PROTOBUF = 'application/x-protobuf';
export const JSON_TYPE = 'application/json';

/**
 * A decoded export. Its spans sit behind a private field: the input guard walks every enumerable
 * field of a body (http/storable.ts), and an export's attribute values are read only where Tally
 * uses them (a NUL in a prompt must not refuse the export).
 */
export class OtlpBody {
  readonly #decoded: DecodedExport;

  constructor(decoded: DecodedExport) {
    this.#decoded = decoded;
  }

  get decoded(): DecodedExport {
    return this.#decoded;
  }
}

/** Whether the request is OTLP/protobuf, so that its answer is too. */
export function isProtobufRequest(request: FastifyRequest): boolean {
  return (request.headers['content-type'] ?? '').toLowerCase().startsWith(PROTOBUF);
}

function decodeJson(bytes: Buffer): DecodedExport {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new AppError('invalid_json', 'The body is not valid JSON.');
  }
  return decodeJsonExport(parsed);
}

/**
 * The route's own body parsers (in its plugin scope only): OTLP/protobuf and OTLP/JSON, decoded
 * before the handler runs (a gzip or deflate body arrives here inflated, http/content-encoding.ts). A body that does not decode is a 400 and stores nothing.
 */
export function registerOtlpBodyParsers(scope: FastifyInstance): void {
  scope.removeContentTypeParser(JSON_TYPE);
  for (const type of [PROTOBUF, JSON_TYPE]) {
    scope.addContentTypeParser(type, { parseAs: 'buffer' }, (_request, body, done) => {
      try {
        const bytes = body as Buffer;
        done(null, new OtlpBody(type === PROTOBUF ? decodeProtobufExport(bytes) : decodeJson(bytes)));
      } catch (error) {
        done(
          error instanceof OtlpDecodeError ? new AppError('invalid_otlp', error.message) : (error as Error),
          undefined,
        );
      }
    });
  }
}
