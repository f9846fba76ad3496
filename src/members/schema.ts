import { Type } from '@sinclair/typebox';
import { ROLES } from '../accounts/roles.js';
import { ListQueryFields, named, Nullable, Timestamp } from '../http/schemas.js';
import { INVITATION_STATUSES } from './invitations.js';

export const RoleSchema = named(
  'Role',
  Type.Unsafe<(typeof ROLES)[number]>({
    type: 'string',
    enum: [...ROLES],
    description:
      'owner (everything, members included), admin (settings, API keys, webhooks, task types and baselines), analyst (reads everything, changes nothing)',
  }),
);

const invitationStatus = () =>
  Type.Unsafe<(typeof INVITATION_STATUSES)[number]>({
    type: 'string',
    enum: [...INVITATION_STATUSES],
    description: 'pending (its link works), accepted, revoked, or expired (7 days after it was last sent)',
  });
const InvitationStatusSchema = named('InvitationStatus', invitationStatus());

export const CreateInvitationBody = named(
  'CreateInvitationRequest',
  Type.Object(
    {
      email: Type.String({ minLength: 3, maxLength: 254, description: 'The e-mail address to invite' }),
      role: RoleSchema,
    },
    { additionalProperties: false },
  ),
);

export const InvitationParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export const InvitationListQuery = Type.Object(
  { ...ListQueryFields, status: Type.Optional(invitationStatus()) },
  { additionalProperties: false },
);

export const InvitationSchema = named(
  'Invitation',
  Type.Object({
    id: Type.String(),
    email: Type.String({ description: 'Lower-cased' }),
    role: RoleSchema,
    status: InvitationStatusSchema,
    invited_by_account_id: Nullable(
      Type.String({ description: 'The person who invited (or created the key)' }),
    ),
    invited_by_key_id: Nullable(
      Type.String({ description: 'The API key that invited; null from the dashboard or CLI' }),
    ),
    sent_count: Type.Integer({ description: 'How many times the e-mail was sent' }),
    last_sent_at: Nullable(Timestamp),
    created_at: Timestamp,
    expires_at: Timestamp,
    accepted_at: Nullable(Timestamp),
    accepted_account_id: Nullable(Type.String()),
    revoked_at: Nullable(Timestamp),
  }),
);

export const InvitationListSchema = named(
  'InvitationList',
  Type.Object({ data: Type.Array(InvitationSchema), next_cursor: Nullable(Type.String()) }),
);

export const MemberParams = Type.Object({ account_id: Type.String({ minLength: 1, maxLength: 100 }) });
export const MemberListQuery = Type.Object(ListQueryFields, { additionalProperties: false });

export const UpdateMemberBody = named(
  'UpdateMemberRequest',
  Type.Object({ role: RoleSchema }, { additionalProperties: false }),
);

export const MemberSchema = named(
  'Member',
  Type.Object({
    account_id: Type.String(),
    email: Type.String(),
    name: Nullable(Type.String()),
    role: RoleSchema,
    since: Timestamp,
    last_seen_at: Nullable({
      ...Timestamp,
      description: "The latest request of the person's live dashboard sessions in this organisation",
    }),
  }),
);

export const MemberListSchema = named(
  'MemberList',
  Type.Object({
    data: Type.Array(MemberSchema),
    next_cursor: Nullable(Type.String({ description: 'The last account id of this page' })),
  }),
);
