// Bearer-token look-ups (personal access tokens and OAuth access tokens): the one path from a
// presented token to its record and owner, used by API authentication, token info, and (below,
// with refresh tokens and the client) OpenID Connect userinfo and RFC 7662 introspection. Each look-up
// is a single indexed query by digest, joined to the user, compiled once per database.
import { type InferResult, sql } from 'kysely';
import type { Db, DbOrTrx, User } from '../db/schema';
import { statementTemplates } from '../db/statement-templates';
import { accessTokenExpired } from './oauth-tokens';
import { personalAccessTokenExpired } from './personal-access-tokens';
import { sha256Hex } from './secrets';
import { PUBLIC_USER_COLUMNS, twoFactorEnabledSql } from './users';

/** The user columns the API may show: never a credential (password hash, OTP secret). */
export const API_USER_COLUMNS = PUBLIC_USER_COLUMNS;

export type ApiUser = Pick<User, (typeof API_USER_COLUMNS)[number]> & { two_factor_enabled: boolean };

export type TokenKind = 'personal_access_token' | 'oauth_access_token';

/** The owner's global notification settings row as JSON (null when they never set one). */
export type GlobalNotificationSettingsRow = Record<string, unknown> | null;

interface TokenRecordBase {
  id: number;
  scopes: string[];
  expired: boolean;
  revoked: boolean;
  /** With `withGlobalNotificationSettings`: read in the same query (GET /notification_settings in 1 round trip). */
  globalNotificationSettings?: GlobalNotificationSettingsRow;
}

export interface FindTokenOptions {
  /** Also read the owner's global notification settings row, in the same query. */
  withGlobalNotificationSettings?: boolean;
}

export type TokenRecord =
  | (TokenRecordBase & { kind: 'personal_access_token'; user: ApiUser; lastUsedAt: Date | null })
  | (TokenRecordBase & {
      kind: 'oauth_access_token';
      /** Null for an application's own token (client_credentials): it acts for no one. */
      user: ApiUser | null;
      applicationId: number | null;
      createdAt: Date;
      expiresAt: Date;
      /** RFC 9449: the key the token is bound to (cnf.jkt), null for a bearer token. */
      dpopJkt: string | null;
      /** RFC 8707: the resources the token is for; empty = unbound. */
      audience: string[];
    });

/** PATs are `glpat-…`; anything longer than this is not a token of ours (no query for it). */
const MAX_TOKEN_LENGTH = 256;
/** last_used_at is refreshed at most this often per token: not a write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

const userSelection = [
  ...API_USER_COLUMNS.map((c) => `u.${c}` as const),
  twoFactorEnabledSql('u').as('two_factor_enabled'),
] as const;

function splitUser<T extends Record<string, unknown>>(row: T): ApiUser {
  const user: Record<string, unknown> = {};
  // (An application's token, left-joined to no user, reads null for every user column.)
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

// Left-joined: an application's own token (client_credentials) has no user, and is still found, so
// that its expiry, revocation and scope are checked before "no user" (GitLab's order).
const oauthLookup = (db: Db, digest: string) =>
  db
    .selectFrom('oauth_access_tokens as t')
    .leftJoin('users as u', 'u.id', 't.user_id')
    .select([
      't.id as token_id',
      't.scopes',
      't.expires_at',
      't.revoked_at',
      't.application_id',
      't.created_at as token_created_at',
      't.dpop_jkt',
      't.audience',
      ...userSelection,
    ])
    .where('t.token_digest', '=', digest);

/** The owner's global notification settings row, as one JSON value (a scalar subquery). */
const globalSettingsSelection = sql<GlobalNotificationSettingsRow>`(
  select to_jsonb(ns) from notification_settings ns
  where ns.user_id = u.id and ns.group_id is null and ns.project_id is null
)`.as('global_notification_settings');

type PatRow = InferResult<ReturnType<typeof patLookup>>[number];
type OAuthRow = InferResult<ReturnType<typeof oauthLookup>>[number];
type WithSettings = { global_notification_settings?: GlobalNotificationSettingsRow };

/**
 * The look-ups, built and compiled once (db/statement-templates.ts): building and compiling a
 * Kysely query costs about as much as the indexed look-up itself, and only the digest varies.
 */
const lookups = statementTemplates<'digest'>(4);

function lookUpToken(
  db: Db,
  kind: 'pat' | 'patWithSettings',
  digest: string,
): Promise<{ rows: Array<PatRow & WithSettings> }>;
function lookUpToken(
  db: Db,
  kind: 'oauth' | 'oauthWithSettings',
  digest: string,
): Promise<{ rows: Array<OAuthRow & WithSettings> }>;
function lookUpToken(
  db: Db,
  kind: 'pat' | 'patWithSettings' | 'oauth' | 'oauthWithSettings',
  digest: string,
): Promise<{ rows: unknown[] }> {
  return lookups.run(db, kind, { digest }, (slot) => {
    const settings = kind.endsWith('WithSettings');
    if (kind.startsWith('pat')) {
      const query = patLookup(db, slot('digest'));
      return settings ? query.select(globalSettingsSelection) : query;
    }
    const query = oauthLookup(db, slot('digest'));
    return settings ? query.select(globalSettingsSelection) : query;
  });
}

/** A presented token's record and owner, or undefined when no token of that kind matches. */
export async function findTokenRecord(
  db: Db,
  kind: TokenKind,
  token: string,
  now = new Date(),
  options: FindTokenOptions = {},
): Promise<TokenRecord | undefined> {
  if (!token || token.length > MAX_TOKEN_LENGTH) return undefined;
  const digest = sha256Hex(token);
  const settings = options.withGlobalNotificationSettings === true;
  if (kind === 'personal_access_token') {
    const row = (await lookUpToken(db, settings ? 'patWithSettings' : 'pat', digest)).rows[0];
    if (!row) return undefined;
    return {
      kind,
      id: row.token_id,
      scopes: row.scopes,
      expired: personalAccessTokenExpired(row.expires_at, now),
      revoked: row.revoked_at !== null,
      lastUsedAt: row.last_used_at,
      user: splitUser(row),
      ...(settings ? { globalNotificationSettings: row.global_notification_settings ?? null } : {}),
    };
  }
  const row = (await lookUpToken(db, settings ? 'oauthWithSettings' : 'oauth', digest)).rows[0];
  if (!row) return undefined;
  return {
    kind,
    id: row.token_id,
    scopes: row.scopes,
    expired: accessTokenExpired(row, now.getTime()),
    revoked: row.revoked_at !== null,
    applicationId: row.application_id,
    createdAt: row.token_created_at,
    expiresAt: row.expires_at,
    dpopJkt: row.dpop_jkt,
    audience: row.audience,
    user: row.id === null ? null : splitUser(row),
    ...(settings ? { globalNotificationSettings: row.global_notification_settings ?? null } : {}),
  };
}

/** Is a personal access token's last use old enough to record this one (no call, no write, otherwise)? */
export const personalAccessTokenTouchDue = (lastUsedAt: Date | null, now: Date): boolean =>
  !lastUsedAt || now.getTime() - lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS;

/**
 * Record a personal access token's use, at most once per resolution window: the update is
 * conditional, so concurrent requests of one token write at most once.
 */
export async function touchPersonalAccessToken(db: Db, id: number, lastUsedAt: Date | null, now: Date): Promise<void> {
  if (!personalAccessTokenTouchDue(lastUsedAt, now)) return;
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

// ---------------------------------------------------------------------------------------------
// userinfo and introspection: what an OAuth token is, and the one rule for "live" — not expired,
// not revoked (a used refresh token is dead too), and its user not blocked.

export type TokenStatus = 'live' | 'unknown' | 'expired' | 'revoked' | 'blocked_user';

export interface InspectedToken {
  status: TokenStatus;
  kind?: 'access_token' | 'refresh_token';
  token?: {
    id: number;
    scopes: string[];
    expiresAt: Date;
    createdAt: Date;
    applicationId: number | null;
    clientId: string | null;
    /** RFC 9449: the key the access token is bound to (cnf.jkt), null for a bearer token. */
    dpopJkt: string | null;
    /** RFC 8707: the access token's audience (empty: unbound). */
    audience: string[];
    /** Null for an application's own token (client_credentials). */
    user: {
      id: number;
      username: string;
      name: string;
      email: string;
      avatar_url: string | null;
      confirmed_at: Date | null;
    } | null;
  };
}

const lookUp = (db: DbOrTrx, column: 'token_digest' | 'refresh_token_digest', token: string) =>
  db
    .selectFrom('oauth_access_tokens as t')
    .leftJoin('users as u', 'u.id', 't.user_id')
    .leftJoin('oauth_applications as a', 'a.id', 't.application_id')
    .select([
      't.id',
      't.scopes',
      't.expires_at',
      't.revoked_at',
      't.refreshed_at',
      't.created_at',
      't.application_id',
      't.dpop_jkt',
      't.audience',
      'a.uid as client_id',
      'u.id as user_id',
      'u.username',
      'u.name',
      'u.email',
      'u.avatar_url',
      'u.confirmed_at',
      'u.state',
    ])
    .where(`t.${column}`, '=', sha256Hex(token))
    .executeTakeFirst();

/**
 * Inspect an access token, or (for introspection, `refresh` true) a refresh token when no access
 * token matches. Order as API authentication: unknown → expired → revoked → blocked user.
 */
export async function inspectOAuthToken(db: DbOrTrx, token: string, refresh = false): Promise<InspectedToken> {
  let kind: InspectedToken['kind'] = 'access_token';
  let row = await lookUp(db, 'token_digest', token);
  if (!row && refresh) {
    kind = 'refresh_token';
    row = await lookUp(db, 'refresh_token_digest', token);
  }
  if (!row) return { status: 'unknown' };
  let status: TokenStatus = 'live';
  if (kind === 'access_token' && accessTokenExpired(row)) status = 'expired';
  else if (row.revoked_at || (kind === 'refresh_token' && row.refreshed_at)) status = 'revoked';
  else if (row.user_id !== null && row.state !== 'active') status = 'blocked_user';
  return {
    status,
    kind,
    token: {
      id: row.id,
      scopes: row.scopes,
      expiresAt: row.expires_at,
      createdAt: row.created_at,
      applicationId: row.application_id,
      clientId: row.client_id,
      dpopJkt: row.dpop_jkt,
      audience: row.audience,
      user:
        row.user_id === null
          ? null
          : {
              id: row.user_id,
              username: row.username!,
              name: row.name!,
              email: row.email!,
              avatar_url: row.avatar_url,
              confirmed_at: row.confirmed_at,
            },
    },
  };
}
