// Authentication of /api/v4 requests (contract §4). The token is taken from the first of:
// ?private_token=, PRIVATE-TOKEN (personal access tokens only), ?access_token=, Authorization:
// Bearer (an OAuth access token, or a personal access token). The token and its owner are read
// in one indexed query (by digest, joined to the user), then expiry, revocation, scope and the
// user's state are checked, each with GitLab's exact error body.
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import { sql, type CompiledQuery, type InferResult } from 'kysely';
import type { Db, User } from '../db/schema';
import { accessTokenExpired } from '../domain/oauth-tokens';
import { personalAccessTokenExpired } from '../domain/personal-access-tokens';
import { formatScopes, type Scope } from '../domain/scopes';
import { sha256Hex } from '../domain/secrets';
import { ApiError, forbidden, unauthorized } from './errors';

/** The user columns the API may show: never a credential (password hash, OTP secret). */
export const API_USER_COLUMNS = [
  'id',
  'username',
  'email',
  'name',
  'is_admin',
  'state',
  'bio',
  'public_email',
  'avatar_url',
  'external',
  'private_profile',
  'can_create_group',
  'can_create_project',
  'locked_until',
  'confirmed_at',
  'current_sign_in_at',
  'last_sign_in_at',
  'created_at',
] as const;

export type ApiUser = Pick<User, (typeof API_USER_COLUMNS)[number]> & { two_factor_enabled: boolean };

export type TokenKind = 'personal_access_token' | 'oauth_access_token';

export interface ApiPrincipal {
  user: ApiUser;
  tokenKind: TokenKind;
  tokenId: number;
  scopes: string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the API authentication hook on every authenticated /api/v4 request. */
    apiPrincipal?: ApiPrincipal;
  }
  interface FastifyContextConfig {
    /** The route also accepts tokens with only `read_user` (GET/HEAD /user). */
    allowReadUser?: boolean;
  }
}

export const TOKEN_EXPIRED = 'Token is expired. You can either do re-authorization or token refresh.';
export const TOKEN_REVOKED = 'Token was revoked. You have to re-authorize from the user.';
export const INSUFFICIENT_SCOPE = 'The request requires higher privileges than provided by the access token.';

/** PATs are `glpat-…`; anything longer than this is not a token of ours (no query for it). */
const MAX_TOKEN_LENGTH = 256;
/** last_used_at is refreshed at most this often per token: not a write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

interface FoundToken {
  kind: TokenKind;
  /** Where it was found: the first match wins (contract §4). */
  source: 'private_token' | 'PRIVATE-TOKEN' | 'access_token' | 'Authorization';
  token: string;
}

/** Present as in Rails' `.presence`: absent and empty values do not count. */
const present = (v: unknown): boolean => v !== undefined && v !== null && v !== '';
/** A repeated parameter or header (an array) is not a token: it is kept as '' and fails. */
const asToken = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), or undefined. */
export const bearerFromHeader = (authorization: string | undefined): string | undefined =>
  authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;

/** The token of a request, from the first place that carries one; undefined when none does. */
export function findRequestToken(request: FastifyRequest): FoundToken | undefined {
  const query = (request.query ?? {}) as Record<string, unknown>;
  if (present(query.private_token))
    return { kind: 'personal_access_token', source: 'private_token', token: asToken(query.private_token) };
  const header = request.headers['private-token'];
  if (present(header)) return { kind: 'personal_access_token', source: 'PRIVATE-TOKEN', token: asToken(header) };
  let source: FoundToken['source'] = 'access_token';
  let bearer: unknown = query.access_token;
  if (!present(bearer)) {
    source = 'Authorization';
    bearer = bearerFromHeader(request.headers.authorization);
  }
  if (!present(bearer)) return undefined;
  const token = asToken(bearer);
  // A PAT sent as a bearer token: GitLab tells them apart by the prefix (one look-up, not two).
  return { kind: token.startsWith('glpat-') ? 'personal_access_token' : 'oauth_access_token', source, token };
}

interface TokenRecord {
  id: number;
  scopes: string[];
  expired: boolean;
  revoked: boolean;
  last_used_at: Date | null;
  user: ApiUser;
}

const userSelection = [
  ...API_USER_COLUMNS.map((c) => `u.${c}` as const),
  sql<boolean>`u.otp_secret is not null`.as('two_factor_enabled'),
] as const;

function splitUser<T extends Record<string, unknown>>(row: T): ApiUser {
  const user: Record<string, unknown> = {};
  for (const c of API_USER_COLUMNS) user[c] = row[c];
  user.two_factor_enabled = row.two_factor_enabled;
  return user as ApiUser;
}

const patLookup = (db: Db, digest: string) =>
  db
    .selectFrom('personal_access_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .select(['t.id as token_id', 't.scopes', 't.expires_at', 't.revoked_at', 't.last_used_at', ...userSelection])
    .where('t.token_digest', '=', digest);

const oauthLookup = (db: Db, digest: string) =>
  db
    .selectFrom('oauth_access_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .select(['t.id as token_id', 't.scopes', 't.expires_at', 't.revoked_at', ...userSelection])
    .where('t.token_digest', '=', digest);

type PatRow = InferResult<ReturnType<typeof patLookup>>[number];
type OAuthRow = InferResult<ReturnType<typeof oauthLookup>>[number];

/**
 * The two look-ups, compiled once per database: building and compiling a Kysely query costs
 * about as much as the indexed look-up itself, and only the digest (the one parameter) varies.
 */
const compiledLookups = new WeakMap<Db, { pat: CompiledQuery<PatRow>; oauth: CompiledQuery<OAuthRow> }>();

function lookupQuery<K extends 'pat' | 'oauth'>(db: Db, kind: K, digest: string) {
  let compiled = compiledLookups.get(db);
  if (!compiled) {
    compiled = { pat: patLookup(db, '').compile(), oauth: oauthLookup(db, '').compile() };
    compiledLookups.set(db, compiled);
  }
  const query = compiled[kind];
  return { ...query, parameters: [digest] } as typeof query;
}

/** One indexed look-up by digest, joined to the owner: a single round trip. */
export async function findTokenRecord(
  db: Db,
  kind: TokenKind,
  token: string,
  now = new Date(),
): Promise<TokenRecord | undefined> {
  if (!token || token.length > MAX_TOKEN_LENGTH) return undefined;
  const digest = sha256Hex(token);
  if (kind === 'personal_access_token') {
    const row = (await db.executeQuery(lookupQuery(db, 'pat', digest))).rows[0];
    if (!row) return undefined;
    return {
      id: row.token_id,
      scopes: row.scopes,
      expired: personalAccessTokenExpired(row.expires_at, now),
      revoked: row.revoked_at !== null,
      last_used_at: row.last_used_at,
      user: splitUser(row),
    };
  }
  const row = (await db.executeQuery(lookupQuery(db, 'oauth', digest))).rows[0];
  if (!row) return undefined;
  return {
    id: row.token_id,
    scopes: row.scopes,
    expired: accessTokenExpired(row, now.getTime()),
    revoked: row.revoked_at !== null,
    last_used_at: null,
    user: splitUser(row),
  };
}

/**
 * The scopes that allow a request: `api` always; `read_api` for GET/HEAD; `read_user` for GET/HEAD
 * of routes that opt in (GET /user). Canonical order, as sent in the 403 `scope` member.
 */
export function scopesAllowing(method: string, allowReadUser: boolean): Scope[] {
  const read = method === 'GET' || method === 'HEAD';
  return read ? (allowReadUser ? ['api', 'read_api', 'read_user'] : ['api', 'read_api']) : ['api'];
}

/** RFC 6750 §3 errors carry OAuth's body and no-store headers, as GitLab (Doorkeeper) sends them. */
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

function invalidToken(description: string): ApiError {
  return new ApiError(
    401,
    { error: 'invalid_token', error_description: description },
    {
      ...NO_STORE,
      // RFC 6750 §3: a protected resource names the error in WWW-Authenticate.
      'WWW-Authenticate': `Bearer realm="Protected by OAuth 2.0", error="invalid_token", error_description="${description}"`,
    },
  );
}

function insufficientScope(required: Scope[]): ApiError {
  const scope = formatScopes(required);
  return new ApiError(
    403,
    { error: 'insufficient_scope', error_description: INSUFFICIENT_SCOPE, scope },
    {
      ...NO_STORE,
      'WWW-Authenticate': `Bearer realm="Protected by OAuth 2.0", error="insufficient_scope", error_description="${INSUFFICIENT_SCOPE}", scope="${scope}"`,
    },
  );
}

/**
 * Resolve and check the request's token; returns the principal or throws the contract's error.
 * Order as in GitLab: unknown → expired → revoked → scope → blocked user.
 */
export async function authenticateApiRequest(db: Db, request: FastifyRequest, now = new Date()): Promise<ApiPrincipal> {
  const found = findRequestToken(request);
  if (!found) throw unauthorized();
  const record = await findTokenRecord(db, found.kind, found.token, now);
  if (!record) throw unauthorized();
  if (record.expired) throw invalidToken(TOKEN_EXPIRED);
  if (record.revoked) throw invalidToken(TOKEN_REVOKED);
  const allowed = scopesAllowing(request.method, request.routeOptions.config?.allowReadUser === true);
  if (!record.scopes.some((s) => (allowed as string[]).includes(s))) throw insufficientScope(allowed);
  if (record.user.state !== 'active') throw forbidden();
  if (
    found.kind === 'personal_access_token' &&
    (!record.last_used_at || now.getTime() - record.last_used_at.getTime() >= LAST_USED_RESOLUTION_MS)
  ) {
    await touchPersonalAccessToken(db, record.id, now);
  }
  return { user: record.user, tokenKind: found.kind, tokenId: record.id, scopes: record.scopes };
}

/** Conditional, so concurrent requests of one token write at most once per resolution window. */
async function touchPersonalAccessToken(db: Db, id: number, now: Date): Promise<void> {
  await db
    .updateTable('personal_access_tokens')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) =>
      eb.or([
        eb('last_used_at', 'is', null),
        eb('last_used_at', '<', new Date(now.getTime() - LAST_USED_RESOLUTION_MS)),
      ]),
    )
    .execute();
}

/** An onRequest hook: every route of the plugin it is added to requires a valid token. */
export function apiAuthentication(db: Db): onRequestHookHandler {
  return async (request) => {
    request.apiPrincipal = await authenticateApiRequest(db, request);
  };
}

/** The authenticated principal of a request (only on routes behind apiAuthentication). */
export function principalOf(request: FastifyRequest): ApiPrincipal {
  if (!request.apiPrincipal) throw unauthorized();
  return request.apiPrincipal;
}
