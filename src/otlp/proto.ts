import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/**
 * The OTLP schema: the official .proto files of opentelemetry-proto, vendored in ./proto (their
 * README says from where), loaded by protobufjs. Under tsx they sit beside this module; `tsc` does
 * not copy them to dist/, so the built service reads them from src/otlp/proto of the same checkout
 * (as the dashboard's assets).
 */
function protoDirectory(): string {
  const here = fileURLToPath(new URL('./proto/', import.meta.url));
  if (existsSync(here)) return here;
  return fileURLToPath(new URL('../../src/otlp/proto/', import.meta.url));
}

function loadRoot(): protobuf.Root {
  const dir = protoDirectory();
  const root = new protobuf.Root();
  // The vendored files import each other by file name; google/protobuf/any.proto (imported by
  // status.proto) is one of protobufjs's own common files, which it resolves without a path.
  root.resolvePath = (_origin, target) =>
    target.startsWith('google/protobuf/') ? target : `${dir}${target.split('/').pop() ?? target}`;
  root.loadSync(['trace_service.proto', 'status.proto']);
  return root;
}

// 64-bit integers (times in nanoseconds, integer attributes) decode to plain numbers rather than
// a Long object each: an export of 512 spans made some 1,500 of them. Nanoseconds past 2^53
// lose their last digits, far below the microsecond Tally keeps; nothing else in Tally uses
// protobufjs.
(protobuf.util as { Long: unknown }).Long = null;
protobuf.configure();

const root = loadRoot();

export const ExportTraceServiceRequest = root.lookupType(
  'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest',
);
const ExportTraceServiceResponse = root.lookupType(
  'opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse',
);
const RpcStatus = root.lookupType('google.rpc.Status');

/** ExportTraceServiceResponse in protobuf; without partial success, the empty message. */
export function encodeExportResponse(
  partial: { rejectedSpans: number; errorMessage: string } | null,
): Buffer {
  const message = ExportTraceServiceResponse.create(
    partial === null
      ? {}
      : {
          partialSuccess: {
            rejectedSpans: partial.rejectedSpans,
            errorMessage: partial.errorMessage,
          },
        },
  );
  return Buffer.from(ExportTraceServiceResponse.encode(message).finish());
}

/** A google.rpc.Status in protobuf: what OTLP/HTTP answers a protobuf request that failed. */
export function encodeRpcStatus(code: number, message: string): Buffer {
  return Buffer.from(RpcStatus.encode(RpcStatus.create({ code, message })).finish());
}

/** Decodes a google.rpc.Status (tests read what a protobuf client reads). */
export function decodeRpcStatus(bytes: Uint8Array): { code: number; message: string } {
  const status = RpcStatus.toObject(RpcStatus.decode(bytes), { defaults: true }) as {
    code: number;
    message: string;
  };
  return { code: status.code, message: status.message };
}

/** Decodes an ExportTraceServiceResponse into its JSON shape (tests). */
export function decodeExportResponse(bytes: Uint8Array): {
  partialSuccess?: { rejectedSpans: number; errorMessage: string };
} {
  return ExportTraceServiceResponse.toObject(ExportTraceServiceResponse.decode(bytes), {
    longs: Number,
  }) as { partialSuccess?: { rejectedSpans: number; errorMessage: string } };
}
