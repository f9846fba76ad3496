import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_STATUS, type ErrorCode } from '../errors.js';
import { COMPONENT } from './openapi.js';

/**
 * Names `schema` as a component of the OpenAPI document (`#/components/schemas/<name>`). The
 * schema still validates and serializes inline; only the document refers to it by `$ref`.
 */
export function named<T extends TSchema>(name: string, schema: T): T {
  return Object.assign(schema, { [COMPONENT]: name });
}

/** The closed list of DESIGN §2, as an enum in the document. */
export const ErrorCodeSchema = named(
  'ErrorCode',
  Type.Unsafe<ErrorCode>({ type: 'string', enum: Object.keys(ERROR_STATUS) }),
);

export const ErrorDetailSchema = named(
  'ErrorDetail',
  Type.Object({
    path: Type.String({ description: 'JSON pointer of the offending input, e.g. /body/outcome' }),
    message: Type.String(),
  }),
);

/** The inner object of the one error body; also each failed item of a batch. */
export const ErrorObjectSchema = named(
  'ErrorObject',
  Type.Object({
    code: ErrorCodeSchema,
    message: Type.String(),
    details: Type.Optional(Type.Array(ErrorDetailSchema, { description: 'Validation errors only' })),
    request_id: Type.String({ description: 'Same as the X-Request-Id header' }),
  }),
);

/** The one error body (DESIGN §2). */
export const ErrorSchema = named('Error', Type.Object({ error: ErrorObjectSchema }));

/** Error responses every authenticated route can give, for the OpenAPI document. */
export const errorResponses = {
  '4xx': { ...ErrorSchema, 'x-response-description': 'The request was refused; `error.code` says why' },
  '5xx': { ...ErrorSchema, 'x-response-description': 'Internal error, or the database is unavailable (503)' },
};

/**
 * Query fields of every list endpoint: newest first, cursor = id of the last item seen, so a
 * cursor has the shape of an id (a prefix and a ULID); anything else is a 422, never a query.
 */
export const ListQueryFields = {
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
  cursor: Type.Optional(Type.String({ pattern: '^[a-z]{1,8}_[0-9A-HJKMNP-TV-Z]{26}$' })),
};

/** A response schema with the description the document gives the response. */
export function described<T extends TSchema>(description: string, schema: T): T {
  return { ...schema, 'x-response-description': description };
}

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const Timestamp = Type.String({ format: 'date-time' });
