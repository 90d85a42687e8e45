// Personal access tokens API (GitLab's lib/api/personal_access_tokens.rb and …/self_*.rb):
// GET /personal_access_tokens (own; administrators: all, with GitLab's filters), GET|DELETE
// /personal_access_tokens/:id and /self, POST …/:id/rotate and /self/rotate, and POST
// /users/:id/personal_access_tokens (administrators). The rules (expiry, scopes, rotation, audit)
// are domain/personal-access-tokens', shared with the account page and the CLI.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import { DomainError } from '../../domain/errors';
import {
  createPersonalAccessToken,
  findPersonalAccessTokenById,
  listPersonalAccessTokensPage,
  PERSONAL_ACCESS_TOKEN_SORTS,
  type PersonalAccessTokenRow,
  type PersonalAccessTokenSort,
  personalAccessTokenExpired,
  revokePersonalAccessToken,
  rotatePersonalAccessToken,
} from '../../domain/personal-access-tokens';
import { PERSONAL_ACCESS_TOKEN_SCOPES } from '../../domain/scopes';
import { findUserById } from '../../domain/users';
import {
  booleanQueryParam,
  dateParam,
  dateTimeParam,
  integerParam,
  invalidParam,
  notAValidValue,
} from '../../http/api-params';
import { apiAuditActor, principalOf, requireAdmin } from '../../http/authenticate';
import { ApiError, apiNotFound, unauthorized } from '../../http/errors';
import { fetchPage, parsePagination } from '../../http/pagination';
import { mergedParams } from '../../shared/params';
import { authErrorResponses, badRequestResponse, booleanParam, notFoundResponse, paginationParams } from './schemas';

const tokenProperties = {
  id: { type: 'integer' },
  name: { type: 'string' },
  revoked: { type: 'boolean' },
  created_at: { type: 'string', format: 'date-time' },
  description: { type: 'string', nullable: true, description: 'Lanyard keeps no description: always null' },
  scopes: { type: 'array', items: { type: 'string' } },
  user_id: { type: 'integer' },
  last_used_at: { type: 'string', format: 'date-time', nullable: true },
  active: { type: 'boolean', description: 'Neither revoked nor expired' },
  expires_at: { type: 'string', format: 'date', nullable: true },
} as const;

/** GitLab's API::Entities::PersonalAccessToken (GET /personal_access_tokens/self). */
export const personalAccessTokenSchema = {
  $id: 'PersonalAccessToken',
  type: 'object',
  description: "A personal access token (never its value), GitLab's PersonalAccessToken entity",
  properties: tokenProperties,
  required: Object.keys(tokenProperties),
} as const;

const withIpsProperties = {
  ...tokenProperties,
  last_used_ips: {
    type: 'array',
    items: { type: 'string' },
    description: 'Lanyard records no addresses per token: always empty',
  },
} as const;

/** GitLab's PersonalAccessTokenWithLastUsedIps (the list and GET /personal_access_tokens/:id). */
export const personalAccessTokenWithLastUsedIpsSchema = {
  $id: 'PersonalAccessTokenWithLastUsedIps',
  type: 'object',
  description: 'A personal access token with the addresses it was last used from',
  properties: withIpsProperties,
  required: Object.keys(withIpsProperties),
} as const;

const withTokenProperties = {
  ...tokenProperties,
  token: { type: 'string', description: 'The token (glpat-…): shown this once, stored only as a digest' },
} as const;

/** GitLab's PersonalAccessTokenWithToken (rotation and creation: the value, once). */
export const personalAccessTokenWithTokenSchema = {
  $id: 'PersonalAccessTokenWithToken',
  type: 'object',
  description: 'A new personal access token and its value, shown once',
  properties: withTokenProperties,
  required: Object.keys(withTokenProperties),
} as const;

export function personalAccessTokenView(row: PersonalAccessTokenRow, now = new Date()) {
  return {
    id: row.id,
    name: row.name,
    revoked: row.revoked_at !== null,
    created_at: row.created_at.toISOString(),
    description: null,
    scopes: row.scopes,
    user_id: row.user_id,
    last_used_at: row.last_used_at?.toISOString() ?? null,
    active: row.revoked_at === null && !personalAccessTokenExpired(row.expires_at, now),
    expires_at: row.expires_at,
  };
}

const withLastUsedIps = (row: PersonalAccessTokenRow) => ({ ...personalAccessTokenView(row), last_used_ips: [] });

const TOKEN_STATES = ['active', 'inactive'] as const;

const listQuery = {
  type: 'object',
  properties: {
    user_id: { type: 'string', description: 'Tokens of this user (administrators; others only their own id)' },
    revoked: booleanParam('true: only revoked tokens; false: only tokens not revoked'),
    state: { type: 'string', description: 'active (neither revoked nor expired) or inactive' },
    created_before: { type: 'string', description: 'Created at or before this time (ISO 8601)' },
    created_after: { type: 'string', description: 'Created at or after this time (ISO 8601)' },
    last_used_before: { type: 'string', description: 'Last used at or before this time (ISO 8601)' },
    last_used_after: { type: 'string', description: 'Last used at or after this time (ISO 8601)' },
    expires_before: { type: 'string', description: 'Expiring before this date (YYYY-MM-DD)' },
    expires_after: { type: 'string', description: 'Expiring on or after this date (YYYY-MM-DD)' },
    search: { type: 'string', description: 'Only tokens whose name contains this (case-insensitive)' },
    sort: { type: 'string', description: `One of ${PERSONAL_ACCESS_TOKEN_SORTS.join(', ')} (default: by id)` },
    ...paginationParams,
  },
} as const;

const idParams = {
  type: 'object',
  properties: { id: { type: 'string', description: 'The ID of a personal access token' } },
  required: ['id'],
} as const;

const expiresAtParams = {
  type: 'object',
  properties: {
    expires_at: { type: 'string', description: 'Expiry of the new token (YYYY-MM-DD); default a week from today' },
  },
} as const;

const createParams = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'The name of the token' },
    scopes: {
      type: 'array',
      items: { type: 'string' },
      description: `The scopes (an array, or comma-separated): ${PERSONAL_ACCESS_TOKEN_SCOPES.join(', ')} (sudo: administrators' tokens only)`,
    },
    expires_at: { type: 'string', description: 'Expiry date (YYYY-MM-DD); none: no expiry' },
  },
} as const;

const userIdParams = {
  type: 'object',
  properties: { id: { type: 'string', description: 'The ID of the user' } },
  required: ['id'],
} as const;

const errorOf = (description: string) => ({ ...badRequestResponse, description });
const tags = ['personal_access_tokens'];

/** A numeric path id, or undefined (GitLab's find_by_id of anything else finds nothing). */
const numericId = (id: string): number | undefined => (/^\d{1,18}$/.test(id) ? Number(id) : undefined);

/** The rotate service's refusals in GitLab's words: {"message":"400 Bad request - Token already revoked"}. */
function asRotateError(err: unknown): unknown {
  if (err instanceof DomainError && err.kind === 'invalid' && !err.details)
    return new ApiError(400, { message: `400 Bad request - ${err.message}` });
  return err;
}

export const personalAccessTokenRoutes: FastifyPluginAsync<AppContext> = async (app, { db, config }) => {
  /**
   * The token named by `:id` if the caller may manage it (its owner or an administrator). GitLab
   * tells only administrators that a token does not exist (404); anyone else gets 401 either way.
   */
  async function manageableToken(request: FastifyRequest): Promise<PersonalAccessTokenRow> {
    const { user } = principalOf(request);
    const id = numericId((request.params as { id: string }).id);
    const token = id === undefined ? undefined : await findPersonalAccessTokenById(db, id);
    if (token && (user.is_admin || token.user_id === user.id)) return token;
    throw user.is_admin ? apiNotFound() : unauthorized();
  }

  /** The token that authenticated the request, for /self: personal access tokens only. */
  async function selfToken(request: FastifyRequest, otherwise: ApiError): Promise<PersonalAccessTokenRow> {
    const principal = principalOf(request);
    if (principal.tokenKind !== 'personal_access_token') throw otherwise;
    const token = await findPersonalAccessTokenById(db, principal.tokenId);
    if (!token) throw unauthorized();
    return token;
  }

  async function rotate(request: FastifyRequest, reply: FastifyReply, token: PersonalAccessTokenRow) {
    const params = mergedParams(request);
    const expiresAt = dateParam(params, 'expires_at');
    try {
      const { token: value, record } = await rotatePersonalAccessToken(db, token.id, {
        expiresAt,
        ...apiAuditActor(request),
      });
      return reply.code(200).send({ ...personalAccessTokenView(record), token: value });
    } catch (err) {
      throw asRotateError(err);
    }
  }

  app.get(
    '/personal_access_tokens',
    {
      schema: {
        operationId: 'listPersonalAccessTokens',
        summary: "Personal access tokens: the caller's own; for administrators, every user's",
        tags,
        querystring: listQuery,
        response: {
          200: { type: 'array', items: { $ref: 'PersonalAccessTokenWithLastUsedIps#' } },
          400: badRequestResponse,
          ...authErrorResponses,
          404: notFoundResponse('User'),
        },
      },
    },
    async (request, reply) => {
      const { user } = principalOf(request);
      const q = request.query as Record<string, unknown>;
      const hasUserId = q.user_id !== undefined;
      const userId = hasUserId && q.user_id !== '' ? integerParam(q, 'user_id') : undefined;
      const state = q.state as string | undefined;
      if (state !== undefined && !(TOKEN_STATES as readonly string[]).includes(state)) throw notAValidValue('state');
      const filter = {
        revoked: booleanQueryParam(q, 'revoked'),
        state: state as (typeof TOKEN_STATES)[number] | undefined,
        createdBefore: dateTimeParam(q, 'created_before'),
        createdAfter: dateTimeParam(q, 'created_after'),
        lastUsedBefore: dateTimeParam(q, 'last_used_before'),
        lastUsedAfter: dateTimeParam(q, 'last_used_after'),
        expiresBefore: dateParam(q, 'expires_before'),
        expiresAfter: dateParam(q, 'expires_after'),
        search: typeof q.search === 'string' && q.search !== '' ? q.search : undefined,
        // GitLab ignores a sort it does not know.
        sort: (PERSONAL_ACCESS_TOKEN_SORTS as readonly string[]).includes(q.sort as string)
          ? (q.sort as PersonalAccessTokenSort)
          : undefined,
      };
      const pagination = parsePagination(q);
      let ownerId: number | undefined;
      if (user.is_admin) {
        // GitLab: an administrator naming a user that does not exist (or none at all) gets 404.
        if (hasUserId && (userId === undefined || !(await findUserById(db, userId)))) throw apiNotFound();
        ownerId = userId;
      } else {
        // Others may name only themselves (restrict_non_admins!: 401 otherwise).
        if (userId !== undefined && userId !== user.id) throw unauthorized();
        ownerId = user.id;
      }
      const rows = await fetchPage(request, reply, config.publicUrl, pagination, (window) =>
        listPersonalAccessTokensPage(db, { ...filter, userId: ownerId, ...window }),
      );
      return rows.map(withLastUsedIps);
    },
  );

  app.get(
    '/personal_access_tokens/self',
    {
      // Every token may see itself, whatever its scopes (GitLab allows all scopes here).
      config: { allowAnyScope: true },
      schema: {
        operationId: 'getCurrentPersonalAccessToken',
        summary: 'The personal access token that authenticates the request',
        tags,
        querystring: { type: 'object', properties: {} },
        response: {
          200: { $ref: 'PersonalAccessToken#' },
          400: errorOf('The request was not made with a personal access token'),
          ...authErrorResponses,
        },
      },
    },
    async (request) =>
      personalAccessTokenView(
        await selfToken(
          request,
          new ApiError(400, {
            message: '400 Bad request - This endpoint requires token type to be a personal access token',
          }),
        ),
      ),
  );

  app.get(
    '/personal_access_tokens/:id',
    {
      schema: {
        operationId: 'getPersonalAccessToken',
        summary: 'A personal access token (own; administrators: any)',
        tags,
        params: idParams,
        querystring: { type: 'object', properties: {} },
        response: {
          200: { $ref: 'PersonalAccessTokenWithLastUsedIps#' },
          ...authErrorResponses,
          404: notFoundResponse('Token'),
        },
      },
    },
    async (request) => withLastUsedIps(await manageableToken(request)),
  );

  app.post(
    '/personal_access_tokens/self/rotate',
    {
      schema: {
        operationId: 'rotateCurrentPersonalAccessToken',
        summary: 'Rotate the token that authenticates the request: it is revoked, a new one is returned once',
        tags,
        querystring: expiresAtParams,
        body: { ...expiresAtParams, nullable: true },
        response: {
          200: { $ref: 'PersonalAccessTokenWithToken#' },
          400: badRequestResponse,
          ...authErrorResponses,
          405: errorOf('Not a personal access token: {"message":"405 Method Not Allowed"}'),
        },
      },
    },
    async (request, reply) =>
      rotate(request, reply, await selfToken(request, new ApiError(405, { message: '405 Method Not Allowed' }))),
  );

  app.post(
    '/personal_access_tokens/:id/rotate',
    {
      schema: {
        operationId: 'rotatePersonalAccessToken',
        summary: 'Rotate a personal access token (own; administrators: any): it is revoked, a new one is returned once',
        tags,
        params: idParams,
        querystring: expiresAtParams,
        body: { ...expiresAtParams, nullable: true },
        response: {
          200: { $ref: 'PersonalAccessTokenWithToken#' },
          400: errorOf(
            'Revoked or expired token ({"message":"400 Bad request - Token already revoked"}), or a bad date',
          ),
          ...authErrorResponses,
          404: notFoundResponse('Token'),
        },
      },
    },
    async (request, reply) => rotate(request, reply, await manageableToken(request)),
  );

  app.delete(
    '/personal_access_tokens/self',
    {
      config: { allowAnyScope: true },
      schema: {
        operationId: 'revokeCurrentPersonalAccessToken',
        summary: 'Revoke the personal access token that authenticates the request',
        tags,
        querystring: { type: 'object', properties: {} },
        response: {
          204: { type: 'null', description: 'Revoked' },
          400: errorOf('The request was not made with a personal access token'),
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const token = await selfToken(
        request,
        new ApiError(400, {
          message: '400 Bad request - This endpoint requires token type to be a personal access token',
        }),
      );
      const { actor, ipAddress } = apiAuditActor(request);
      await revokePersonalAccessToken(db, token.id, actor, ipAddress);
      return reply.code(204).send();
    },
  );

  app.delete(
    '/personal_access_tokens/:id',
    {
      schema: {
        operationId: 'revokePersonalAccessToken',
        summary: 'Revoke a personal access token (own; administrators: any)',
        tags,
        params: idParams,
        querystring: { type: 'object', properties: {} },
        response: {
          204: { type: 'null', description: 'Revoked' },
          400: errorOf('Someone else\'s token: {"message":"400 Bad request"}'),
          ...authErrorResponses,
          404: errorOf('No such token: {"message":"404 Not found"}'),
        },
      },
    },
    async (request, reply) => {
      const { user } = principalOf(request);
      const id = numericId((request.params as { id: string }).id);
      const token = id === undefined ? undefined : await findPersonalAccessTokenById(db, id);
      // GitLab's PersonalAccessToken.find (RecordNotFound's body), then RevokeService's refusal.
      if (!token) throw new ApiError(404, { message: '404 Not found' });
      if (!user.is_admin && token.user_id !== user.id) throw new ApiError(400, { message: '400 Bad request' });
      const { actor, ipAddress } = apiAuditActor(request);
      await revokePersonalAccessToken(db, token.id, actor, ipAddress);
      return reply.code(204).send();
    },
  );

  app.post(
    '/users/:id/personal_access_tokens',
    {
      schema: {
        operationId: 'createUserPersonalAccessToken',
        summary: 'Create a personal access token for a user (administrators): the value is returned once',
        tags: [...tags, 'users'],
        params: userIdParams,
        querystring: createParams,
        body: { ...createParams, nullable: true },
        response: {
          201: { $ref: 'PersonalAccessTokenWithToken#' },
          400: badRequestResponse,
          ...authErrorResponses,
          404: notFoundResponse('User'),
        },
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      const params = mergedParams(request);
      // Grape's validation first, every problem in one message, as GitLab answers.
      const problems: string[] = [];
      const name = typeof params.name === 'string' && params.name !== '' ? params.name : undefined;
      if (name === undefined) problems.push('name is missing');
      const rawScopes = params.scopes;
      // Grape's CommaSeparatedToArray: ["api","read_user"], or "api,read_user".
      const scopes =
        rawScopes === undefined || rawScopes === null
          ? undefined
          : (Array.isArray(rawScopes) ? rawScopes : [rawScopes])
              .flatMap((s) => String(s).split(','))
              .map((s) => s.trim());
      if (!scopes || scopes.length === 0 || scopes.every((s) => s === '')) problems.push('scopes is missing');
      else if (!scopes.every((s) => (PERSONAL_ACCESS_TOKEN_SCOPES as readonly string[]).includes(s)))
        problems.push('scopes does not have a valid value');
      let expiresAt: string | undefined;
      try {
        expiresAt = dateParam(params, 'expires_at');
      } catch {
        problems.push(invalidParam('expires_at').message);
      }
      if (problems.length > 0) throw new ApiError(400, { error: problems.join(', ') });
      const id = numericId((request.params as { id: string }).id);
      const owner = id === undefined ? undefined : await findUserById(db, id);
      if (!owner) throw apiNotFound('User');
      const { actor, ipAddress } = apiAuditActor(request);
      const { token, record } = await createPersonalAccessToken(db, {
        username: owner.username,
        name: name as string,
        scopes: scopes as string[],
        expiresAt,
        actor,
        ipAddress,
      });
      return reply.code(201).send({ ...personalAccessTokenView(record), token });
    },
  );
};
