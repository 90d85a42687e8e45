// Authentication of /api/v4 requests (contract §4). The token is taken from the first of:
// ?private_token=, PRIVATE-TOKEN (personal access tokens only), ?access_token=, Authorization:
// Bearer (an OAuth access token, or a personal access token). The look-up is the domain's
// (domain/access-tokens.ts); this module owns the HTTP part: where the token comes from, the order
// of the checks (expiry, revocation, scope, the user's state) and GitLab's exact error bodies.
// An application's own token (client_credentials) acts for no one: like GitLab (auth_finders.rb:
// `access_token.user || raise(UnauthorizedError)`), it is 401 after its other checks, except on
// routes that name an application scope (`config.applicationScope`) which the token holds.
import type { FastifyContextConfig, FastifyRequest, onRequestHookHandler, onRouteHookHandler } from 'fastify';
import type { Db } from '../db/schema';
import {
  API_USER_COLUMNS,
  type ApiUser,
  findTokenRecord,
  type GlobalNotificationSettingsRow,
  type TokenKind,
  type TokenRecord,
  personalAccessTokenTouchDue,
  touchPersonalAccessToken,
} from '../domain/access-tokens';
import { revokeRotatedTokenFamily } from '../domain/personal-access-tokens';
import { apiResourceIdentifiers } from '../domain/resources';
import { formatScopes, type Scope, SUDO_SCOPE } from '../domain/scopes';
import { findUserByIdOrUsername } from '../domain/sudo';
import { checkResourceProof, consumeResourceProof, dpopTokenFromHeader } from './dpop';
import { ApiError, forbidden, unauthorized } from './errors';

export interface ApiPrincipal {
  /** The user the request acts as: the token's owner, or the user named by `Sudo`. */
  user: ApiUser;
  /** With `Sudo`: the administrator whose token made the request. */
  sudoedBy?: ApiUser;
  tokenKind: TokenKind;
  tokenId: number;
  scopes: string[];
  /**
   * On routes with `config.withGlobalNotificationSettings`, the acting user's global notification
   * settings row, read with the token (absent with `Sudo`: that row is the token owner's).
   */
  globalNotificationSettings?: GlobalNotificationSettingsRow;
}

/** An application's own token, on a route that accepts one (`config.applicationScope`). */
interface ApplicationPrincipal {
  applicationId: number;
  tokenId: number;
  scopes: string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the API authentication hook on every authenticated /api/v4 request made for a user. */
    apiPrincipal?: ApiPrincipal;
    /** Set instead when an application's own token was accepted (`config.applicationScope`). */
    apiApplication?: ApplicationPrincipal;
  }
  interface FastifyContextConfig {
    /**
     * The route also accepts an application's own token (client_credentials) holding this scope,
     * which it then reads from `request.apiApplication`.
     */
    applicationScope?: string;
    /** The route also accepts tokens with only `read_user` (GET/HEAD /user). */
    allowReadUser?: boolean;
    /** Any scope will do (GitLab's /personal_access_tokens/self: every token may see and revoke itself). */
    allowAnyScope?: boolean;
    /** Read the user's global notification settings with the token (one round trip for the route). */
    withGlobalNotificationSettings?: boolean;
  }
}

export const TOKEN_EXPIRED = 'Token is expired. You can either do re-authorization or token refresh.';
export const TOKEN_REVOKED = 'Token was revoked. You have to re-authorize from the user.';
export const INSUFFICIENT_SCOPE = 'The request requires higher privileges than provided by the access token.';
/** RFC 8707: a token whose audience does not include this API (GitLab has no such case). */
export const TOKEN_FOR_ANOTHER_RESOURCE = 'The access token was issued for another resource.';

interface FoundToken {
  kind: TokenKind;
  /** Where it was found: the first match wins (contract §4). */
  source: 'private_token' | 'PRIVATE-TOKEN' | 'access_token' | 'Authorization';
  token: string;
  /** `Authorization: DPoP <token>` (RFC 9449 §7.1): an OAuth access token bound to a key. */
  dpop?: true;
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
    const dpop = dpopTokenFromHeader(request.headers.authorization);
    if (!present(bearer) && dpop) return { kind: 'oauth_access_token', source, token: dpop, dpop: true };
  }
  if (!present(bearer)) return undefined;
  const token = asToken(bearer);
  // A PAT sent as a bearer token: GitLab tells them apart by the prefix (one look-up, not two).
  return { kind: token.startsWith('glpat-') ? 'personal_access_token' : 'oauth_access_token', source, token };
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

function insufficientScope(required: string[]): ApiError {
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
export async function authenticateApiRequest(
  db: Db,
  request: FastifyRequest,
  dpop: ApiDpopOptions,
  now = new Date(),
  /** The route's config (read once per route by apiAuthentication; Fastify's getter builds it per call). */
  route: FastifyContextConfig | undefined = request.routeOptions.config,
): Promise<ApiPrincipal | ApplicationPrincipal> {
  const found = findRequestToken(request);
  if (!found) throw unauthorized();
  const record = await findTokenRecord(
    db,
    found.kind,
    found.token,
    now,
    route?.withGlobalNotificationSettings === true ? WITH_GLOBAL_SETTINGS : WITHOUT_GLOBAL_SETTINGS,
  );
  if (!record) throw unauthorized();
  // GitLab's reuse detection, on every /api/v4 request (contract §7; GitLab only on rotation
  // requests, and not for expired tokens): a token revoked by rotation that is presented again may
  // have been stolen, so every token rotated from it dies too.
  if (record.revoked && record.kind === 'personal_access_token')
    await revokeRotatedTokenFamily(db, record.id, { ipAddress: request.ip });
  if (record.expired) throw invalidToken(TOKEN_EXPIRED);
  if (record.revoked) throw invalidToken(TOKEN_REVOKED);
  // RFC 8707: a token bound to resources is good only at them; an unbound one works as before.
  if (record.kind === 'oauth_access_token' && !audienceAdmits(record.audience, apiResourceIdentifiers(dpop.publicUrl)))
    throw invalidToken(TOKEN_FOR_ANOTHER_RESOURCE);
  // RFC 9449 §7: a bound token only with the DPoP scheme and a proof of its key; its jti is
  // consumed once every other check has passed (a refused request writes nothing).
  const proof =
    record.kind === 'oauth_access_token'
      ? await checkResourceProof(request, {
          dpopScheme: found.dpop === true,
          token: found.token,
          boundJkt: record.dpopJkt,
          ...dpop,
        })
      : undefined;
  const principal = await authorize(db, request, found, record, now, route);
  if (proof) await consumeResourceProof(db, proof);
  return principal;
}

const WITH_GLOBAL_SETTINGS = { withGlobalNotificationSettings: true } as const;
const WITHOUT_GLOBAL_SETTINGS = {} as const;

/** What API authentication needs to check DPoP proofs (config). */
interface ApiDpopOptions {
  publicUrl: string;
  requireNonce: boolean;
}

/** The checks after the token's own (scope, the user, Sudo), in GitLab's order. */
async function authorize(
  db: Db,
  request: FastifyRequest,
  found: FoundToken,
  record: TokenRecord,
  now: Date,
  config: FastifyContextConfig | undefined,
): Promise<ApiPrincipal | ApplicationPrincipal> {
  let allowed: readonly string[] = scopesAllowing(request.method, config?.allowReadUser === true);
  if (config?.applicationScope) allowed = [...allowed, config.applicationScope];
  if (config?.allowAnyScope !== true && !record.scopes.some((s) => allowed.includes(s)))
    throw insufficientScope([...allowed]);
  const { user } = record;
  if (!user) return applicationPrincipal(request, record, config);
  if (user.state !== 'active') throw forbidden();
  const sudoUser = sudoIdentifier(request) === undefined ? undefined : await sudo(db, request, user, record.scopes);
  if (record.kind === 'personal_access_token' && personalAccessTokenTouchDue(record.lastUsedAt, now))
    await touchPersonalAccessToken(db, record.id, record.lastUsedAt, now);
  if (sudoUser) {
    return { user: sudoUser, sudoedBy: user, tokenKind: found.kind, tokenId: record.id, scopes: record.scopes };
  }
  return {
    user,
    tokenKind: found.kind,
    tokenId: record.id,
    scopes: record.scopes,
    ...('globalNotificationSettings' in record
      ? { globalNotificationSettings: record.globalNotificationSettings }
      : {}),
  };
}

const audienceAdmits = (audience: readonly string[], ours: readonly string[]): boolean =>
  audience.length === 0 || audience.some((a) => ours.includes(a));

/** A token without a user: accepted only where the route names an application scope it holds. */
function applicationPrincipal(
  request: FastifyRequest,
  record: TokenRecord,
  config: FastifyContextConfig | undefined,
): ApplicationPrincipal {
  const scope = config?.applicationScope;
  if (record.kind !== 'oauth_access_token' || record.applicationId === null || !scope || !record.scopes.includes(scope))
    throw unauthorized();
  // Sudo is an administrator's; an application is none.
  if (sudoIdentifier(request) !== undefined)
    throw new ApiError(403, { message: '403 Forbidden - Must be admin to use sudo' });
  return { applicationId: record.applicationId, tokenId: record.id, scopes: record.scopes };
}

/** The `Sudo` identifier: the `sudo` query parameter, else the `Sudo` header (GitLab's order). */
function sudoIdentifier(request: FastifyRequest): string | undefined {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const value = present(query.sudo) ? query.sudo : request.headers.sudo;
  if (!present(value)) return undefined;
  // A repeated parameter or header names nobody; it is refused, not guessed.
  if (typeof value !== 'string') throw new ApiError(400, { error: 'sudo is invalid' });
  return value;
}

/**
 * GitLab's `sudo!` (lib/api/helpers.rb): only administrators, only with a token carrying the
 * `sudo` scope, and the named user must exist; the request then acts as that user.
 */
async function sudo(db: Db, request: FastifyRequest, owner: ApiUser, scopes: string[]): Promise<ApiUser | undefined> {
  const identifier = sudoIdentifier(request);
  if (identifier === undefined) return undefined;
  if (!owner.is_admin) throw new ApiError(403, { message: '403 Forbidden - Must be admin to use sudo' });
  if (!scopes.includes(SUDO_SCOPE)) throw insufficientScope([SUDO_SCOPE]);
  const user = await findUserByIdOrUsername(db, identifier, API_USER_COLUMNS);
  if (!user) throw new ApiError(404, { message: `404 User with ID or username '${identifier}' Not Found` });
  if (user.state !== 'active') throw forbidden();
  return user;
}

/**
 * The authentication of the routes of a plugin, as an onRoute hook: each route gets its own
 * onRequest hook (first of its own) that requires a valid token, with the route's config read once
 * here rather than from Fastify's `request.routeOptions` (an object built on every read).
 */
export function apiAuthentication(
  db: Db,
  config: { publicUrl: string; dpopRequireNonce: boolean },
): onRouteHookHandler {
  return (route) => {
    const routeConfig = route.config as FastifyContextConfig | undefined;
    const authenticate: onRequestHookHandler = async (request) => {
      // Read per request, as discovery does: tests learn the public URL only once listening.
      const dpop = { publicUrl: config.publicUrl, requireNonce: config.dpopRequireNonce };
      const principal = await authenticateApiRequest(db, request, dpop, new Date(), routeConfig);
      if ('user' in principal) request.apiPrincipal = principal;
      else request.apiApplication = principal;
    };
    route.onRequest = [authenticate, ...(route.onRequest ? [route.onRequest].flat() : [])];
  };
}

/** The authenticated principal of a request (only on routes behind apiAuthentication). */
export function principalOf(request: FastifyRequest): ApiPrincipal {
  if (!request.apiPrincipal) throw unauthorized();
  return request.apiPrincipal;
}

/** GitLab's authenticated_as_admin!: the acting user must be an administrator, else 403 Forbidden. */
export function requireAdmin(request: FastifyRequest): ApiPrincipal {
  const principal = principalOf(request);
  if (!principal.user.is_admin) throw forbidden();
  return principal;
}

/** Who made an API change, for the audit log: the token's owner (the admin, under Sudo) and the address. */
export function apiAuditActor(request: FastifyRequest): { actor: string; ipAddress: string } {
  const principal = principalOf(request);
  return { actor: `user:${(principal.sudoedBy ?? principal.user).username}`, ipAddress: request.ip };
}
