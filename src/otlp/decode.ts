import { UNSTORABLE } from '../http/storable.js';
import { ExportTraceServiceRequest } from './proto.js';
import {
  emptyAttributes,
  EVALUATION_EVENT,
  isGenAiKey,
  MAX_RESOURCE_VALUE_LENGTH,
  READ_KEYS,
  type Attributes,
  type AttributeValue,
  type ExportedSpan,
} from './spans.js';

/** A body that is not an ExportTraceServiceRequest (answered 400, nothing stored). */
export class OtlpDecodeError extends Error {}

/** The spans of one export, and how many spans were refused for invalid ids or times. */
export interface DecodedExport {
  spans: ExportedSpan[];
  invalid: number;
}

// Span flags (trace.proto SpanFlags): whether the parent's remoteness is known, and whether it is.
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** The end of year 9999 in microseconds: a later time has no date an event can carry. */
const MAX_TIME_US = Date.UTC(9999, 11, 31, 23, 59, 59, 999) * 1000;

/** What both encodings yield for one span before it is checked. */
interface RawSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  flags: number;
  name: string;
  /** Microseconds since the epoch. */
  startUs: number;
  endUs: number;
  statusCode: number;
  genAi: boolean;
  attributes: Attributes;
  evaluations: Attributes[];
}

function finish(raw: RawSpan, resource: Attributes, idsChecked: boolean): ExportedSpan | null {
  const valid =
    (idsChecked ||
      (TRACE_ID.test(raw.traceId) &&
        SPAN_ID.test(raw.spanId) &&
        (raw.parentSpanId === '' || SPAN_ID.test(raw.parentSpanId)))) &&
    raw.traceId !== ZERO_TRACE &&
    raw.spanId !== ZERO_SPAN &&
    Number.isFinite(raw.startUs) &&
    Number.isFinite(raw.endUs) &&
    raw.startUs > 0 &&
    raw.endUs >= raw.startUs &&
    raw.endUs <= MAX_TIME_US;
  if (!valid) return null;
  const parentSpanId = raw.parentSpanId === ZERO_SPAN ? '' : raw.parentSpanId;
  return {
    traceId: raw.traceId,
    spanId: raw.spanId,
    parentSpanId,
    parentIsRemote: (raw.flags & HAS_IS_REMOTE) === 0 ? null : (raw.flags & IS_REMOTE) !== 0,
    name: raw.name,
    startUs: raw.startUs,
    endUs: raw.endUs,
    statusCode: raw.statusCode,
    genAi: raw.genAi,
    attributes: raw.attributes,
    evaluations: raw.evaluations,
    resource,
  };
}

// ---------------------------------------------------------------- protobuf

interface LongLike {
  toNumber(): number;
}
type PbValue = {
  value?: string;
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | LongLike;
  doubleValue?: number;
} | null;
type PbKeyValue = { key?: string; value?: PbValue };
interface PbSpan {
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  parentSpanId?: Uint8Array;
  flags?: number;
  name?: string;
  startTimeUnixNano?: number | LongLike;
  endTimeUnixNano?: number | LongLike;
  attributes?: PbKeyValue[];
  events?: { name?: string; attributes?: PbKeyValue[] }[];
  status?: { code?: number } | null;
}
interface PbRequest {
  resourceSpans?: { resource?: { attributes?: PbKeyValue[] } | null; scopeSpans?: { spans?: PbSpan[] }[] }[];
}

/**
 * An id of `length` bytes in hex, or null when it has another length. protobufjs decodes bytes
 * as Buffers under Node, and leaves an absent field as its default, an empty plain array.
 */
function hexId(bytes: Uint8Array | undefined, length: number, optional: boolean): string | null {
  if (!(bytes instanceof Uint8Array) || bytes.length === 0) return optional ? '' : null;
  if (bytes.length !== length) return null;
  return Buffer.isBuffer(bytes)
    ? bytes.toString('hex')
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

const NO_EVALUATIONS: Attributes[] = [];

const long = (value: number | LongLike | undefined) =>
  value === undefined ? 0 : typeof value === 'number' ? value : value.toNumber();

function pbScalar(value: PbValue | undefined): AttributeValue | undefined {
  switch (value?.value) {
    case 'stringValue':
      return value.stringValue;
    case 'boolValue':
      return value.boolValue;
    case 'intValue':
      return long(value.intValue);
    case 'doubleValue':
      return value.doubleValue;
    default:
      return undefined;
  }
}

function pbAttributes(list: PbKeyValue[] | undefined, keep: (key: string) => boolean): Attributes {
  const out = emptyAttributes();
  for (const kv of list ?? []) {
    const key = kv.key ?? '';
    if (!keep(key)) continue;
    const value = pbScalar(kv.value);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** An ExportTraceServiceRequest in protobuf, by the vendored official schema (proto.ts). */
export function decodeProtobufExport(body: Uint8Array): DecodedExport {
  let request: PbRequest;
  try {
    request = ExportTraceServiceRequest.decode(body) as PbRequest;
  } catch (error) {
    const reason = error instanceof RangeError ? 'nests too deeply' : (error as Error).message;
    throw new OtlpDecodeError(`The body is not a protobuf ExportTraceServiceRequest: ${reason}.`);
  }
  const spans: ExportedSpan[] = [];
  let invalid = 0;
  for (const rs of request.resourceSpans ?? []) {
    const resource = pbAttributes(rs.resource?.attributes, () => true);
    dropLongValues(resource);
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        let genAi = false;
        const attributes = pbAttributes(span.attributes, (key) => {
          if (!genAi && isGenAiKey(key)) genAi = true;
          return READ_KEYS.has(key);
        });
        let evaluations = NO_EVALUATIONS;
        for (const event of span.events ?? []) {
          if (event.name !== EVALUATION_EVENT) continue;
          if (evaluations === NO_EVALUATIONS) evaluations = [];
          evaluations.push(pbAttributes(event.attributes, (key) => READ_KEYS.has(key)));
        }
        const traceId = hexId(span.traceId, 16, false);
        const spanId = hexId(span.spanId, 8, false);
        const parentSpanId = hexId(span.parentSpanId, 8, true);
        if (traceId === null || spanId === null || parentSpanId === null) {
          invalid++;
          continue;
        }
        const done = finish(
          {
            traceId,
            spanId,
            parentSpanId,
            flags: span.flags ?? 0,
            name: span.name ?? '',
            // Decoded as doubles (proto.ts), nanoseconds since the epoch are within 128 ns: the
            // microsecond kept may be one off, never more.
            startUs: Math.floor(long(span.startTimeUnixNano) / 1000),
            endUs: Math.floor(long(span.endTimeUnixNano) / 1000),
            statusCode: span.status?.code ?? 0,
            genAi: genAi || evaluations.length > 0,
            attributes,
            evaluations,
          },
          resource,
          true,
        );
        if (done) spans.push(done);
        else invalid++;
      }
    }
  }
  return { spans, invalid };
}

// ---------------------------------------------------------------- JSON

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A field of an OTLP/JSON message: lowerCamelCase as the spec writes it, or the .proto's own
 * snake_case name, which protobuf JSON parsers accept too.
 */
function get(message: Json, camel: string, snake: string = camel): unknown {
  if (Object.hasOwn(message, camel)) return message[camel];
  return Object.hasOwn(message, snake) ? message[snake] : undefined;
}

function list(message: Json, camel: string, snake: string, path: string): unknown[] {
  const value = get(message, camel, snake);
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new OtlpDecodeError(`${path}.${camel} must be an array.`);
  return value;
}

function object(value: unknown, path: string): Json {
  if (!isObject(value)) throw new OtlpDecodeError(`${path} must be an object.`);
  return value;
}

/** int64 and fixed64 come as strings (proto3 JSON) or as numbers. */
function int64(value: unknown, path: string): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return Number(value);
  throw new OtlpDecodeError(`${path} must be an integer or a string of digits.`);
}

/** Nanoseconds since the epoch as microseconds; exact from a string (a double is not past 2^53). */
function micros(value: unknown, path: string): number {
  if (typeof value === 'string' && /^\d{4,}$/.test(value)) return Number(value.slice(0, -3));
  return Math.floor(int64(value, path) / 1000);
}

function jsonScalar(value: unknown, path: string): AttributeValue | undefined {
  if (value === undefined || value === null) return undefined;
  const v = object(value, path);
  const s = get(v, 'stringValue', 'string_value');
  if (typeof s === 'string') return s;
  const b = get(v, 'boolValue', 'bool_value');
  if (typeof b === 'boolean') return b;
  const i = get(v, 'intValue', 'int_value');
  if (i !== undefined) return int64(i, `${path}.intValue`);
  const d = get(v, 'doubleValue', 'double_value');
  if (typeof d === 'number') return d;
  return undefined;
}

function jsonAttributes(value: unknown, path: string, keep: (key: string) => boolean): Attributes {
  const out = emptyAttributes();
  if (value === undefined || value === null) return out;
  if (!Array.isArray(value)) throw new OtlpDecodeError(`${path} must be an array.`);
  value.forEach((item, i) => {
    const kv = object(item, `${path}[${i}]`);
    const key = kv.key;
    if (typeof key !== 'string') throw new OtlpDecodeError(`${path}[${i}].key must be a string.`);
    if (!keep(key)) return;
    const scalar = jsonScalar(kv.value, `${path}[${i}].value`);
    if (scalar !== undefined) out[key] = scalar;
  });
  return out;
}

const jsonId = (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : '');

/** An ExportTraceServiceRequest in OTLP/JSON (ids in hex, enums as numbers), already parsed. */
export function decodeJsonExport(body: unknown): DecodedExport {
  const request = object(body, 'The body');
  const spans: ExportedSpan[] = [];
  let invalid = 0;
  list(request, 'resourceSpans', 'resource_spans', 'body').forEach((rsValue, r) => {
    const at = `resourceSpans[${r}]`;
    const rs = object(rsValue, at);
    const resourceValue = get(rs, 'resource');
    const resource =
      resourceValue === undefined || resourceValue === null
        ? emptyAttributes()
        : jsonAttributes(
            object(resourceValue, `${at}.resource`).attributes,
            `${at}.resource.attributes`,
            () => true,
          );
    dropLongValues(resource);
    list(rs, 'scopeSpans', 'scope_spans', at).forEach((ssValue, s) => {
      const ssAt = `${at}.scopeSpans[${s}]`;
      list(object(ssValue, ssAt), 'spans', 'spans', ssAt).forEach((spanValue, i) => {
        const spanAt = `${ssAt}.spans[${i}]`;
        const span = object(spanValue, spanAt);
        let genAi = false;
        const attributes = jsonAttributes(span.attributes, `${spanAt}.attributes`, (key) => {
          if (!genAi && isGenAiKey(key)) genAi = true;
          return READ_KEYS.has(key);
        });
        const evaluations: Attributes[] = [];
        list(span, 'events', 'events', spanAt).forEach((eventValue, e) => {
          const event = object(eventValue, `${spanAt}.events[${e}]`);
          if (event.name !== EVALUATION_EVENT) return;
          evaluations.push(
            jsonAttributes(event.attributes, `${spanAt}.events[${e}].attributes`, (key) =>
              READ_KEYS.has(key),
            ),
          );
        });
        const status = get(span, 'status');
        const code = isObject(status) ? status.code : undefined;
        const name = span.name;
        const done = finish(
          {
            traceId: jsonId(get(span, 'traceId', 'trace_id')),
            spanId: jsonId(get(span, 'spanId', 'span_id')),
            parentSpanId: jsonId(get(span, 'parentSpanId', 'parent_span_id') ?? ''),
            flags: typeof span.flags === 'number' ? span.flags : 0,
            name: typeof name === 'string' ? name : '',
            startUs: micros(
              get(span, 'startTimeUnixNano', 'start_time_unix_nano'),
              `${spanAt}.startTimeUnixNano`,
            ),
            endUs: micros(get(span, 'endTimeUnixNano', 'end_time_unix_nano'), `${spanAt}.endTimeUnixNano`),
            statusCode: typeof code === 'number' ? code : code === 'STATUS_CODE_ERROR' ? 2 : 0,
            genAi: genAi || evaluations.length > 0,
            attributes,
            evaluations,
          },
          resource,
          false,
        );
        if (done) spans.push(done);
        else invalid++;
      });
    });
  });
  return { spans, invalid };
}

/**
 * Resource attributes rules can match: short values only, so a held span stays small, and only
 * those both engines can store (no NUL, no unpaired surrogate, in the key or the value).
 */
function dropLongValues(resource: Attributes): void {
  for (const [key, value] of Object.entries(resource)) {
    if (
      (typeof value === 'string' && (value.length > MAX_RESOURCE_VALUE_LENGTH || UNSTORABLE.test(value))) ||
      UNSTORABLE.test(key)
    )
      delete resource[key];
  }
}
