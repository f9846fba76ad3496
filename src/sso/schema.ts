import { Type } from '@sinclair/typebox';
import { named, Timestamp } from '../http/schemas.js';
import { PROVISIONED_ROLES } from './connections.js';

const Role = Type.Unsafe<(typeof PROVISIONED_ROLES)[number]>({
  type: 'string',
  enum: [...PROVISIONED_ROLES],
  description: 'The role of a person provisioned at first sign-in (owners are made by another owner)',
});

export const SsoPutBody = named(
  'SsoConnectionInput',
  Type.Object(
    {
      issuer: Type.String({
        minLength: 1,
        maxLength: 500,
        description:
          'The OpenID Provider issuer, exactly as its discovery document writes it; https:// (http:// only on 127.0.0.1 or localhost)',
      }),
      client_id: Type.String({ minLength: 1, maxLength: 500 }),
      client_secret: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 2000,
          description:
            'Write-only, stored encrypted; required the first time, omitted to keep the stored one',
        }),
      ),
      allowed_domains: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
        minItems: 1,
        maxItems: 50,
        description: 'E-mail domains that may sign in (exact match, e.g. example.com)',
      }),
      default_role: Type.Optional(Role),
      passwords_allowed: Type.Optional(
        Type.Boolean({
          description: 'false: members sign in to this organisation only through single sign-on',
        }),
      ),
      enabled: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
);

export const SsoConnectionSchema = named(
  'SsoConnection',
  Type.Object({
    organization_id: Type.String(),
    issuer: Type.String(),
    client_id: Type.String(),
    client_secret_set: Type.Boolean({ description: 'Always true; the secret itself is never returned' }),
    allowed_domains: Type.Array(Type.String()),
    default_role: Role,
    passwords_allowed: Type.Boolean(),
    enabled: Type.Boolean(),
    redirect_uri: Type.String({ description: 'Register this redirect URI at the provider' }),
    start_url: Type.String({ description: 'Opens a single sign-on into this organisation' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  }),
);
