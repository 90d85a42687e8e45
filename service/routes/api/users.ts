// Users API (GitLab's lib/api/users.rb): GET /users (username=, search=, active, blocked, external;
// administrators also admins, created_after/before, order_by/sort and e-mail search), GET
// /users/:id (GitLab's public User entity, or UserDetailsWithAdmin for administrators), and POST
// /users/:id/block and /unblock (administrators), through the CLI's setUserState.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import {
  type DirectoryUser,
  findDirectoryUser,
  highestRole,
  listDirectoryUsers,
  USER_ORDERS,
  type UserOrder,
} from '../../domain/user-directory';
import { setUserState } from '../../domain/users';
import { booleanQueryParam, dateTimeParam, notAValidValue } from '../../http/api-params';
import { apiAuditActor, principalOf, requireAdmin } from '../../http/authenticate';
import { ApiError, apiNotFound } from '../../http/errors';
import { fetchPage, parsePagination } from '../../http/pagination';
import { authErrorResponses, badRequestResponse, booleanParam, notFoundResponse, paginationParams } from './schemas';
import { currentUserProperties, currentUserView } from './user';

const pick = <K extends keyof typeof currentUserProperties>(keys: readonly K[]) =>
  Object.fromEntries(keys.map((k) => [k, currentUserProperties[k]])) as Pick<typeof currentUserProperties, K>;

const BASIC_KEYS = ['id', 'username', 'name', 'state', 'locked', 'avatar_url', 'web_url'] as const;
const PUBLIC_KEYS = [
  ...BASIC_KEYS,
  'created_at',
  'bio',
  'location',
  'public_email',
  'skype',
  'linkedin',
  'twitter',
  'discord',
  'website_url',
  'organization',
  'job_title',
  'pronouns',
  'bot',
  'work_information',
  'followers',
  'following',
  'is_followed',
  'local_time',
] as const;

/** GitLab's API::Entities::UserBasic: what anyone may list. */
export const userBasicSchema = {
  $id: 'UserBasic',
  type: 'object',
  description: "A user as anyone may list them (GitLab's UserBasic)",
  properties: pick(BASIC_KEYS),
  required: [...BASIC_KEYS],
} as const;

/** GitLab's API::Entities::User: a user's public profile. */
export const userSchema = {
  $id: 'User',
  type: 'object',
  description: "A user's public profile (GitLab's User entity)",
  properties: pick(PUBLIC_KEYS),
  required: [...PUBLIC_KEYS],
} as const;

const { is_admin: _isAdmin, ...publicProperties } = currentUserProperties;
const adminProperties = {
  ...publicProperties,
  is_admin: { type: 'boolean' },
  note: { type: 'string', nullable: true, description: 'Administrators’ note: Lanyard keeps none (null)' },
  namespace_id: { type: 'integer', nullable: true, description: 'Lanyard users have no namespace (null)' },
  created_by: { type: 'object', nullable: true, description: 'Who created the user: not recorded (null)' },
  email_reset_offered_at: { type: 'string', format: 'date-time', nullable: true },
} as const;

/** GitLab's API::Entities::UserWithAdmin: every field, for administrators. */
export const userWithAdminSchema = {
  $id: 'UserWithAdmin',
  type: 'object',
  description: "A user as administrators see them (GitLab's UserWithAdmin)",
  properties: adminProperties,
  required: Object.keys(adminProperties),
} as const;

const detailsProperties = {
  ...adminProperties,
  highest_role: { type: 'integer', description: 'The highest access level of any membership (0: none)' },
  current_sign_in_ip: { type: 'string', nullable: true, description: 'Not recorded by Lanyard (null)' },
  last_sign_in_ip: { type: 'string', nullable: true, description: 'Not recorded by Lanyard (null)' },
} as const;

/** GitLab's API::Entities::UserDetailsWithAdmin (GET /users/:id for administrators). */
export const userDetailsWithAdminSchema = {
  $id: 'UserDetailsWithAdmin',
  type: 'object',
  description: "One user as administrators see them (GitLab's UserDetailsWithAdmin)",
  properties: detailsProperties,
  required: Object.keys(detailsProperties),
} as const;

function only<K extends string>(view: Record<string, unknown>, keys: readonly K[]) {
  return Object.fromEntries(keys.map((k) => [k, view[k]]));
}

function adminView(user: DirectoryUser, publicUrl: string) {
  const { is_admin: _ignored, ...view } = currentUserView(user, publicUrl);
  return {
    ...view,
    is_admin: user.is_admin,
    note: null,
    namespace_id: null,
    created_by: null,
    email_reset_offered_at: null,
  };
}

const listQuery = {
  type: 'object',
  properties: {
    username: { type: 'string', description: 'The user with this username (exact, case-insensitive)' },
    search: {
      type: 'string',
      description: 'Name or username containing this, or this exact public e-mail (administrators: any e-mail)',
    },
    active: booleanParam('Only active users'),
    blocked: booleanParam('Only blocked users'),
    external: booleanParam('Only external users'),
    admins: booleanParam('Only administrators (administrators only)'),
    created_after: { type: 'string', description: 'Created at or after (ISO 8601; administrators only)' },
    created_before: { type: 'string', description: 'Created at or before (ISO 8601; administrators only)' },
    order_by: { type: 'string', description: `One of ${USER_ORDERS.join(', ')} (default id; administrators only)` },
    sort: { type: 'string', description: 'asc or desc (default desc; administrators only)' },
    ...paginationParams,
  },
} as const;

const idParams = {
  type: 'object',
  properties: { id: { type: 'string', description: 'The ID of the user' } },
  required: ['id'],
} as const;

const tags = ['users'];

/** `:id` is an integer in GitLab's route requirements: anything else is no route at all. */
function userIdOf(request: FastifyRequest): number {
  const { id } = request.params as { id: string };
  if (!/^\d{1,18}$/.test(id)) throw new ApiError(404, { error: '404 Not Found' });
  return Number(id);
}

export const usersRoutes: FastifyPluginAsync<AppContext> = async (app, { db, config }) => {
  app.get(
    '/users',
    {
      config: { allowReadUser: true },
      schema: {
        operationId: 'listUsers',
        summary:
          'Users (UserBasic; UserWithAdmin for administrators), newest first; blocked ones for administrators only',
        tags,
        querystring: listQuery,
        response: {
          200: { type: 'array', items: { anyOf: [{ $ref: 'UserWithAdmin#' }, { $ref: 'UserBasic#' }] } },
          400: badRequestResponse,
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const { user } = principalOf(request);
      const q = request.query as Record<string, unknown>;
      const orderBy = (q.order_by ?? 'id') as UserOrder;
      if (!USER_ORDERS.includes(orderBy)) throw notAValidValue('order_by');
      const sort = q.sort ?? 'desc';
      if (sort !== 'asc' && sort !== 'desc') throw notAValidValue('sort');
      const created = { after: dateTimeParam(q, 'created_after'), before: dateTimeParam(q, 'created_before') };
      const filter = {
        username: typeof q.username === 'string' && q.username !== '' ? q.username : undefined,
        search: typeof q.search === 'string' && q.search !== '' ? q.search : undefined,
        searchPrivateEmails: user.is_admin,
        hideBlocked: !user.is_admin,
        active: booleanQueryParam(q, 'active'),
        blocked: booleanQueryParam(q, 'blocked'),
        external: booleanQueryParam(q, 'external'),
        // GitLab drops the administrators' parameters for everyone else.
        ...(user.is_admin
          ? {
              admins: booleanQueryParam(q, 'admins'),
              createdAfter: created.after,
              createdBefore: created.before,
              orderBy,
              sort: sort as 'asc' | 'desc',
            }
          : { orderBy: 'id' as const, sort: 'desc' as const }),
      };
      const pagination = parsePagination(q);
      const rows = await fetchPage(request, reply, config.publicUrl, pagination, (window) =>
        listDirectoryUsers(db, { ...filter, ...window }),
      );
      return rows.map((u) =>
        user.is_admin ? adminView(u, config.publicUrl) : only(currentUserView(u, config.publicUrl), BASIC_KEYS),
      );
    },
  );

  app.get(
    '/users/:id',
    {
      config: { allowReadUser: true },
      schema: {
        operationId: 'getUser',
        summary: 'A user (User; UserDetailsWithAdmin for administrators)',
        tags,
        params: idParams,
        querystring: { type: 'object', properties: {} },
        response: {
          200: { anyOf: [{ $ref: 'UserDetailsWithAdmin#' }, { $ref: 'User#' }] },
          ...authErrorResponses,
          404: notFoundResponse('User'),
        },
      },
    },
    async (request) => {
      const { user: viewer } = principalOf(request);
      const user = await findDirectoryUser(db, userIdOf(request));
      if (!user) throw apiNotFound('User');
      if (!viewer.is_admin) return only(currentUserView(user, config.publicUrl), PUBLIC_KEYS);
      return {
        ...adminView(user, config.publicUrl),
        highest_role: await highestRole(db, user.id),
        current_sign_in_ip: null,
        last_sign_in_ip: null,
      };
    },
  );

  for (const action of ['block', 'unblock'] as const) {
    app.post(
      `/users/:id/${action}`,
      {
        schema: {
          operationId: `${action}User`,
          summary:
            action === 'block'
              ? 'Block a user (administrators): their tokens stop working, they cannot sign in'
              : 'Unblock a user (administrators)',
          tags,
          params: idParams,
          querystring: { type: 'object', properties: {} },
          response: {
            201: {
              type: 'boolean',
              nullable: true,
              description:
                action === 'block'
                  ? 'true when blocked; null when the user was already blocked (GitLab)'
                  : 'true when unblocked; false when the user was not blocked (GitLab)',
            },
            ...authErrorResponses,
            404: notFoundResponse('User'),
          },
        },
      },
      async (request, reply) => {
        const admin = requireAdmin(request);
        const user = await findDirectoryUser(db, userIdOf(request));
        if (!user) throw apiNotFound('User');
        if (action === 'block') {
          if (user.id === (admin.sudoedBy ?? admin.user).id)
            throw new ApiError(403, {
              message: '403 Forbidden - The API initiating user cannot be blocked by the API',
            });
          // GitLab's `break if user.blocked?`: nothing to do, and the body says so.
          if (user.state === 'blocked') return reply.code(201).send(null);
        } else if (user.state !== 'blocked') {
          // GitLab's UnblockService: `activate` fails on an active user.
          return reply.code(201).send(false);
        }
        const { actor, ipAddress } = apiAuditActor(request);
        await setUserState(db, user.username, action === 'block' ? 'blocked' : 'active', actor, ipAddress);
        return reply.code(201).send(true);
      },
    );
  }
};
