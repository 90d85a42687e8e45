// OAuth access/refresh tokens: issuing, rotation, revocation and look-up (stored as digests).
// One row holds an access token and the refresh token issued with it (Doorkeeper's model), so
// revoking either revokes both. A refresh chain shares family_id (its first token's id).
import { sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';
import { randomHex, sha256Hex } from './secrets';

export const ACCESS_TOKEN_LIFETIME_SECONDS = 7200;

/** Columns safe to select: never the digests. */
export const ACCESS_TOKEN_COLUMNS = [
  'id',
  'application_id',
  'user_id',
  'scopes',
  'expires_at',
  'revoked_at',
  'refreshed_at',
  'parent_id',
  'family_id',
  'authorization_code_id',
  'created_at',
] as const;

export type AccessTokenRecord = NonNullable<Awaited<ReturnType<typeof findAccessTokenByToken>>>;

/** One indexed look-up of an access token by its digest (API authentication, token info). */
export const findAccessTokenByToken = (db: DbOrTrx, token: string) =>
  db
    .selectFrom('oauth_access_tokens')
    .select(ACCESS_TOKEN_COLUMNS)
    .where('token_digest', '=', sha256Hex(token))
    .executeTakeFirst();

export const findAccessTokenByRefreshToken = (db: DbOrTrx, refreshToken: string) =>
  db
    .selectFrom('oauth_access_tokens')
    .select(ACCESS_TOKEN_COLUMNS)
    .where('refresh_token_digest', '=', sha256Hex(refreshToken))
    .executeTakeFirst();

/** The row of a refresh token, locked (FOR UPDATE) for the caller's transaction: one rotation wins. */
export const lockAccessTokenByRefreshToken = (trx: DbOrTrx, refreshToken: string) =>
  trx
    .selectFrom('oauth_access_tokens')
    .select(ACCESS_TOKEN_COLUMNS)
    .where('refresh_token_digest', '=', sha256Hex(refreshToken))
    .forUpdate()
    .executeTakeFirst();

export interface IssueTokenInput {
  applicationId: number | null;
  userId: number;
  scopes: string[];
  /** Issue a refresh token with the access token (not for the password grant). */
  withRefreshToken: boolean;
  parentId?: number;
  familyId?: number;
  authorizationCodeId?: number | null;
}

export interface IssuedToken {
  id: number;
  accessToken: string;
  refreshToken?: string;
  scopes: string[];
  expiresIn: number;
  createdAt: Date;
}

export async function issueAccessToken(db: DbOrTrx, input: IssueTokenInput): Promise<IssuedToken> {
  const accessToken = randomHex();
  const refreshToken = input.withRefreshToken ? randomHex() : undefined;
  const row = await db
    .insertInto('oauth_access_tokens')
    .values({
      application_id: input.applicationId,
      user_id: input.userId,
      token_digest: sha256Hex(accessToken),
      refresh_token_digest: refreshToken ? sha256Hex(refreshToken) : null,
      scopes: input.scopes,
      expires_at: sql<Date>`now() + make_interval(secs => ${ACCESS_TOKEN_LIFETIME_SECONDS})`,
      parent_id: input.parentId ?? null,
      family_id: input.familyId ?? null,
      authorization_code_id: input.authorizationCodeId ?? null,
    })
    .returning(['id', 'created_at'])
    .executeTakeFirstOrThrow();
  return {
    id: row.id,
    accessToken,
    refreshToken,
    scopes: input.scopes,
    expiresIn: ACCESS_TOKEN_LIFETIME_SECONDS,
    createdAt: row.created_at,
  };
}

export interface RotationInput {
  refreshToken: string;
  /** The authenticated client's application; undefined for a client that sent no credentials. */
  applicationId: number | undefined;
  /** Canonical requested scopes (must be a subset of the token's), or undefined for all of them. */
  scopes: string[] | undefined;
  /** The refresh stamp: the service's clock, like GrantContext.receivedAt, which it is compared with. */
  at: Date;
}

export interface Rotation {
  /** The presented token's row as it was when locked, or undefined for an unknown token. */
  old?: Pick<
    AccessTokenRecord,
    | 'id'
    | 'application_id'
    | 'user_id'
    | 'scopes'
    | 'revoked_at'
    | 'refreshed_at'
    | 'authorization_code_id'
    | 'created_at'
  > & {
    application_uid: string | null;
    application_confidential: boolean | null;
    user_active: boolean;
  };
  /** Set when the rotation happened. */
  issued?: IssuedToken;
}

/**
 * A refresh token rotation in ONE statement: the row is locked (FOR UPDATE), marked refreshed and
 * its successor inserted only when every condition holds (the client's token, or a public
 * client's; not revoked; not refreshed before; the user active; scopes no wider). Of concurrent
 * rotations exactly one wins: the others wait on the lock and then see `refreshed_at` set (the
 * UPDATE re-checks it on the newest row version too). The caller turns a refusal into its error.
 */
export async function rotateRefreshToken(db: DbOrTrx, input: RotationInput): Promise<Rotation> {
  const accessToken = randomHex();
  const refreshToken = randomHex();
  const requested = input.scopes ? sql`${input.scopes}::text[]` : sql`null::text[]`;
  const { rows } = await sql<{
    id: number;
    application_id: number | null;
    user_id: number;
    scopes: string[];
    revoked_at: Date | null;
    refreshed_at: Date | null;
    authorization_code_id: number | null;
    created_at: Date;
    application_uid: string | null;
    application_confidential: boolean | null;
    user_active: boolean;
    new_id: number | null;
    new_scopes: string[] | null;
    new_created_at: Date | null;
  }>`
    with old as (
      select t.id, t.application_id, t.user_id, t.scopes, t.revoked_at, t.refreshed_at, t.family_id,
        t.authorization_code_id, t.created_at, a.uid as application_uid, a.confidential as application_confidential,
        u.state = 'active' as user_active
      from oauth_access_tokens t
      join users u on u.id = t.user_id
      left join oauth_applications a on a.id = t.application_id
      where t.refresh_token_digest = ${sha256Hex(input.refreshToken)}
      for update of t
    ), rotated as (
      update oauth_access_tokens t set refreshed_at = ${input.at}
      from old
      where t.id = old.id and t.refreshed_at is null and t.revoked_at is null and old.user_active
        and old.application_id is not null
        and ${input.applicationId === undefined ? sql`old.application_confidential = false` : sql`old.application_id = ${input.applicationId}`}
        and (${requested} is null or ${requested} <@ old.scopes)
      returning t.id
    ), issued as (
      insert into oauth_access_tokens
        (application_id, user_id, token_digest, refresh_token_digest, scopes, expires_at, parent_id, family_id, authorization_code_id)
      select old.application_id, old.user_id, ${sha256Hex(accessToken)}, ${sha256Hex(refreshToken)},
        coalesce(${requested}, old.scopes), now() + make_interval(secs => ${ACCESS_TOKEN_LIFETIME_SECONDS}),
        old.id, coalesce(old.family_id, old.id), old.authorization_code_id
      from old join rotated on rotated.id = old.id
      returning id, scopes, created_at
    )
    select old.id, old.application_id, old.user_id, old.scopes, old.revoked_at, old.refreshed_at,
      old.authorization_code_id, old.created_at, old.application_uid, old.application_confidential, old.user_active, issued.id as new_id, issued.scopes as new_scopes, issued.created_at as new_created_at
    from old left join issued on true
  `.execute(db);
  const row = rows[0];
  if (!row) return {};
  const { new_id, new_scopes, new_created_at, ...old } = row;
  if (new_id === null) return { old };
  return {
    old,
    issued: {
      id: new_id,
      accessToken,
      refreshToken,
      scopes: new_scopes!,
      expiresIn: ACCESS_TOKEN_LIFETIME_SECONDS,
      createdAt: new_created_at!,
    },
  };
}

/**
 * The refresh token of `id` has been used: it dies; its access token lives until it expires.
 * Stamped with the service's clock, like GrantContext.receivedAt, which it is compared with.
 */
export async function markRefreshed(trx: DbOrTrx, id: number, at = new Date()): Promise<void> {
  await trx.updateTable('oauth_access_tokens').set({ refreshed_at: at }).where('id', '=', id).execute();
}

/** Revoke one row: its access token and its refresh token together. */
export async function revokeAccessToken(db: DbOrTrx, id: number): Promise<void> {
  await db
    .updateTable('oauth_access_tokens')
    .set({ revoked_at: new Date() })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .execute();
}

/**
 * Revoke every token refreshed from `id`, directly or not (RFC 9700 §4.14.2: a replayed refresh
 * token means it leaked, and whoever rotated it since holds a descendant). The replayed token's
 * own access token is left to expire, like every rotated-away access token.
 */
export async function revokeDescendants(db: DbOrTrx, id: number): Promise<number> {
  const result = await sql`
    with recursive tree(id) as (
      select id from oauth_access_tokens where parent_id = ${id}
      union all
      select t.id from oauth_access_tokens t join tree on t.parent_id = tree.id
    )
    update oauth_access_tokens set revoked_at = now()
    where id in (select id from tree) and revoked_at is null
  `.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** Revoke every token of a refresh chain (RFC 7009 §2.1: revoking a refresh token ends its grant). */
export async function revokeTokenFamily(
  db: DbOrTrx,
  token: Pick<AccessTokenRecord, 'id' | 'family_id'>,
): Promise<void> {
  const familyId = token.family_id ?? token.id;
  await db
    .updateTable('oauth_access_tokens')
    .set({ revoked_at: new Date() })
    .where((eb) => eb.or([eb('id', '=', familyId), eb('family_id', '=', familyId)]))
    .where('revoked_at', 'is', null)
    .execute();
}

/** RFC 6749 §4.1.2: a replayed code revokes every token issued from it (and their refreshes). */
export async function revokeTokensFromAuthorizationCode(db: DbOrTrx, codeId: number): Promise<number> {
  const result = await db
    .updateTable('oauth_access_tokens')
    .set({ revoked_at: new Date() })
    .where('authorization_code_id', '=', codeId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export type TokenState = 'active' | 'expired' | 'revoked';
/** An access token is expired from its expires_at on (the one rule; API authentication uses it too). */
export const accessTokenExpired = (token: Pick<AccessTokenRecord, 'expires_at'>, now = Date.now()): boolean =>
  token.expires_at.getTime() <= now;

export function tokenState(token: Pick<AccessTokenRecord, 'expires_at' | 'revoked_at'>, now = Date.now()): TokenState {
  if (token.revoked_at) return 'revoked';
  if (accessTokenExpired(token, now)) return 'expired';
  return 'active';
}
