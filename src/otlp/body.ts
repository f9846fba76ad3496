import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { decodeJsonExport, decodeProtobufExport, OtlpDecodeError, type DecodedExport } from './decode.js';

const gunzipAsync = promisify(gunzip);

/**
 * Bytes of an export as sent (compressed or not). OTLP exporters batch up to 512 spans by default
 * and the OpenTelemetry Collector accepts 20 MiB; prompts recorded on spans make them large.
 */
export const OTLP_BODY_LIMIT_BYTES = 8 * 1024 * 1024;
/** Bytes of an export once decompressed: a small gzip body must not inflate without bound. */
export const OTLP_DECOMPRESSED_LIMIT_BYTES = 32 * 1024 * 1024;

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

async function inflate(request: FastifyRequest, body: Buffer): Promise<Buffer> {
  const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return body;
  if (encoding !== 'gzip') {
    throw new AppError(
      'unsupported_media_type',
      'Send the body uncompressed or with Content-Encoding: gzip.',
    );
  }
  try {
    return await gunzipAsync(body, { maxOutputLength: OTLP_DECOMPRESSED_LIMIT_BYTES });
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new AppError(
        'payload_too_large',
        `The body decompresses to more than ${OTLP_DECOMPRESSED_LIMIT_BYTES} bytes; export smaller batches.`,
      );
    }
    throw new AppError('invalid_otlp', 'The body is not valid gzip.');
  }
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
 * The route's own body parsers (in its plugin scope only): OTLP/protobuf and OTLP/JSON, gzip or
 * not, decoded before the handler runs. A body that does not decode is a 400 and stores nothing.
 */
export function registerOtlpBodyParsers(scope: FastifyInstance): void {
  scope.removeContentTypeParser(JSON_TYPE);
  for (const type of [PROTOBUF, JSON_TYPE]) {
    scope.addContentTypeParser(type, { parseAs: 'buffer' }, (request, body, done) => {
      inflate(request, body as Buffer)
        .then((bytes) => {
          try {
            const decoded = type === PROTOBUF ? decodeProtobufExport(bytes) : decodeJson(bytes);
            done(null, new OtlpBody(decoded));
          } catch (error) {
            done(
              error instanceof OtlpDecodeError
                ? new AppError('invalid_otlp', error.message)
                : (error as Error),
              undefined,
            );
          }
        })
        .catch((error: unknown) => done(error as Error, undefined));
    });
  }
}
