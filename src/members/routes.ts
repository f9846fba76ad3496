import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import {
  createInvitation,
  getInvitation,
  listInvitations,
  resendInvitation,
  revokeInvitation,
} from './invitations.js';
import { changeMemberRole, getMember, listMembers, removeMember } from './members.js';
import {
  CreateInvitationBody,
  InvitationListQuery,
  InvitationListSchema,
  InvitationParams,
  InvitationSchema,
  MemberListQuery,
  MemberListSchema,
  MemberParams,
  MemberSchema,
  UpdateMemberBody,
} from './schema.js';

const invitations = { tags: ['members'], params: InvitationParams };
const members = { tags: ['members'], params: MemberParams };

/** `/v1/invitations` and `/v1/members`: the organisation's people, for admin keys. */
export function registerMemberRoutes(app: FastifyInstance): void {
  app.post<{ Body: Static<typeof CreateInvitationBody> }>(
    '/v1/invitations',
    {
      schema: {
        tags: ['members'],
        operationId: 'createInvitation',
        summary:
          'Invite an e-mail with a role: the invitation e-mail goes out with a link valid 7 days (a pending invitation of the same e-mail is sent again instead)',
        body: CreateInvitationBody,
        response: {
          200: described(
            'The pending invitation of this e-mail, sent again with a new link',
            InvitationSchema,
          ),
          201: described('The invitation; its e-mail is on its way', InvitationSchema),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { invitation, resent } = await createInvitation({
        ctx: orgCtx(app, request),
        input: request.body,
      });
      return reply.code(resent ? 200 : 201).send(invitation);
    },
  );

  app.get<{ Querystring: Static<typeof InvitationListQuery> }>(
    '/v1/invitations',
    {
      schema: {
        tags: ['members'],
        operationId: 'listInvitations',
        summary: 'List invitations, newest first, optionally by status',
        querystring: InvitationListQuery,
        response: { 200: described('A page of invitations', InvitationListSchema), ...errorResponses },
      },
    },
    async (request) =>
      listInvitations({
        ctx: orgCtx(app, request),
        limit: request.query.limit,
        cursor: request.query.cursor,
        status: request.query.status,
      }),
  );

  app.get<{ Params: Static<typeof InvitationParams> }>(
    '/v1/invitations/:id',
    {
      schema: {
        ...invitations,
        operationId: 'getInvitation',
        summary: 'One invitation',
        response: { 200: described('The invitation', InvitationSchema), ...errorResponses },
      },
    },
    async (request) => getInvitation({ ctx: orgCtx(app, request), id: request.params.id }),
  );

  app.post<{ Params: Static<typeof InvitationParams> }>(
    '/v1/invitations/:id/resend',
    {
      schema: {
        ...invitations,
        operationId: 'resendInvitation',
        summary: 'Send an invitation again with a new link valid 7 days; the previous link stops working',
        response: { 200: described('The invitation after sending', InvitationSchema), ...errorResponses },
      },
    },
    async (request) =>
      (await resendInvitation({ ctx: orgCtx(app, request), id: request.params.id })).invitation,
  );

  app.delete<{ Params: Static<typeof InvitationParams> }>(
    '/v1/invitations/:id',
    {
      schema: {
        ...invitations,
        operationId: 'revokeInvitation',
        summary: 'Revoke an invitation: its link stops working',
        response: { 200: described('The revoked invitation', InvitationSchema), ...errorResponses },
      },
    },
    async (request) => revokeInvitation({ ctx: orgCtx(app, request), id: request.params.id }),
  );

  app.get<{ Querystring: Static<typeof MemberListQuery> }>(
    '/v1/members',
    {
      schema: {
        tags: ['members'],
        operationId: 'listMembers',
        summary: "List the organisation's members with their role, since when and when last seen",
        querystring: MemberListQuery,
        response: { 200: described('A page of members', MemberListSchema), ...errorResponses },
      },
    },
    async (request) =>
      listMembers({ ctx: orgCtx(app, request), limit: request.query.limit, cursor: request.query.cursor }),
  );

  app.get<{ Params: Static<typeof MemberParams> }>(
    '/v1/members/:account_id',
    {
      schema: {
        ...members,
        operationId: 'getMember',
        summary: 'One member',
        response: { 200: described('The member', MemberSchema), ...errorResponses },
      },
    },
    async (request) => getMember({ ctx: orgCtx(app, request), accountId: request.params.account_id }),
  );

  app.patch<{ Params: Static<typeof MemberParams>; Body: Static<typeof UpdateMemberBody> }>(
    '/v1/members/:account_id',
    {
      schema: {
        ...members,
        operationId: 'updateMember',
        summary: "Change a member's role (an organisation keeps at least one owner)",
        body: UpdateMemberBody,
        response: { 200: described('The member after the change', MemberSchema), ...errorResponses },
      },
    },
    async (request) =>
      changeMemberRole({
        ctx: orgCtx(app, request),
        accountId: request.params.account_id,
        role: request.body.role,
      }),
  );

  app.delete<{ Params: Static<typeof MemberParams> }>(
    '/v1/members/:account_id',
    {
      schema: {
        ...members,
        operationId: 'removeMember',
        summary: "Remove a member; the person's sessions in this organisation end at their next request",
        response: { 204: described('Removed; no body', Type.Null()), ...errorResponses },
      },
    },
    async (request, reply) => {
      await removeMember({ ctx: orgCtx(app, request), accountId: request.params.account_id });
      return reply.code(204).send();
    },
  );
}
