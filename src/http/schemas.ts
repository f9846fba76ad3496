import { Type } from '@sinclair/typebox';

/** The one error body (DESIGN §2). */
export const ErrorSchema = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
    request_id: Type.String(),
  }),
});

/** Error responses every authenticated route can give, for the OpenAPI document. */
export const errorResponses = { '4xx': ErrorSchema, '5xx': ErrorSchema };

/**
 * Query fields of every list endpoint: newest first, cursor = id of the last item seen, so a
 * cursor has the shape of an id (a prefix and a ULID); anything else is a 422, never a query.
 */
export const ListQueryFields = {
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
  cursor: Type.Optional(Type.String({ pattern: '^[a-z]{1,8}_[0-9A-HJKMNP-TV-Z]{26}$' })),
};
