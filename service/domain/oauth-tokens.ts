// OAuth access/refresh tokens: issuing, rotation, revocation and look-up (stored as digests).
// One row holds an access token and the refresh token issued with it (Doorkeeper's model), so
// revoking either revokes both. A refresh chain shares family_id (its first token's id); only that
// first token names the authorization code the chain came from.
import { sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';
import { type SlotOf, statementTemplates } from '../db/statement-templates';
import { withTransaction } from '../db/transaction';
import {
  clientCheckSql,
  clientIdCheckOf,
  NO_SECRET_CHECK,
  type SecretCheck,
  type SecretCheckSlot,
  type SecretCheckTry,
  secretCheckCtesOf,
  secretCheckDecided,
  secretCheckValues,
  unprefixedClientIdCheck,
} from './applications';
import { SCOPE_ORDER } from './scopes';
import { randomHex, sha256Hex } from './secrets';

export const ACCESS_TOKEN_LIFETIME_SECONDS = 7200;
/** Contract §2 "Refresh retries": a rotation answers at most this many retries; the next is a replay. */
export const REFRESH_RETRY_BUDGET = 2;

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
  'dpop_jkt',
  'resources',
  'audience',
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

export interface IssueTokenInput {
  applicationId: number | null;
  /** Null: an application's own token (client_credentials), which acts for no one. */
  userId: number | null;
  scopes: string[];
  /** Issue a refresh token with the access token (not for the password grant). */
  withRefreshToken: boolean;
  parentId?: number;
  familyId?: number;
  authorizationCodeId?: number | null;
  /** RFC 9449 §6.1: bind the access token (and, for a public client, the refresh token) to this key. */
  dpopJkt?: string;
  /** RFC 8707: the grant's resources (what a refresh may narrow to). */
  resources?: string[];
  /** RFC 8707: the access token's audience; absent = the grant's resources (none: unbound). */
  audience?: string[];
}

export interface IssuedToken {
  id: number;
  accessToken: string;
  refreshToken?: string;
  scopes: string[];
  expiresIn: number;
  createdAt: Date;
  /** RFC 8707: the resources the access token is for (empty: unbound). */
  audience: string[];
}

/** The slots of issueAccessToken's insert, one per column value. */
type IssueSlot =
  | 'applicationId'
  | 'userId'
  | 'tokenDigest'
  | 'refreshDigest'
  | 'scopes'
  | 'lifetime'
  | 'parentId'
  | 'familyId'
  | 'codeId'
  | 'dpopJkt'
  | 'resources'
  | 'audience';
// Built and compiled once (db/statement-templates.ts) and run straight on the pool: every grant
// that issues a token without rotating one (the password grant's third statement) sends it.
const issues = statementTemplates<IssueSlot>(1);

export async function issueAccessToken(db: DbOrTrx, input: IssueTokenInput): Promise<IssuedToken> {
  const accessToken = randomHex();
  const refreshToken = input.withRefreshToken ? randomHex() : undefined;
  const audience = input.audience ?? input.resources ?? [];
  const values: Record<IssueSlot, unknown> = {
    applicationId: input.applicationId,
    userId: input.userId,
    tokenDigest: sha256Hex(accessToken),
    refreshDigest: refreshToken ? sha256Hex(refreshToken) : null,
    scopes: input.scopes,
    lifetime: ACCESS_TOKEN_LIFETIME_SECONDS,
    parentId: input.parentId ?? null,
    familyId: input.familyId ?? null,
    codeId: input.authorizationCodeId ?? null,
    dpopJkt: input.dpopJkt ?? null,
    resources: input.resources ?? [],
    audience,
  };
  const { rows } = await issues.run<{ id: number; created_at: Date }>(db, 'issue', values, (slot) =>
    db
      .insertInto('oauth_access_tokens')
      .values({
        application_id: slot('applicationId'),
        user_id: slot('userId'),
        token_digest: slot('tokenDigest'),
        refresh_token_digest: slot('refreshDigest'),
        scopes: slot('scopes'),
        expires_at: sql<Date>`now() + make_interval(secs => ${slot('lifetime')})`,
        parent_id: slot('parentId'),
        family_id: slot('familyId'),
        authorization_code_id: slot('codeId'),
        dpop_jkt: slot('dpopJkt'),
        resources: slot('resources'),
        audience: slot('audience'),
      })
      .returning(['id', 'created_at']),
  );
  const row = rows[0];
  return {
    id: row.id,
    accessToken,
    refreshToken,
    scopes: input.scopes,
    expiresIn: ACCESS_TOKEN_LIFETIME_SECONDS,
    createdAt: row.created_at,
    audience,
  };
}

export interface RotationInput {
  refreshToken: string;
  /** The authenticated client's application; null when no credentials came (a public client). */
  clientApplicationId: number | null;
  /**
   * A client secret to check in the same statement (secretCheckCtes, applications.ts) instead of
   * an application authenticated before (clientApplicationId must then be null): the token rotates
   * only for the application it authenticates, and a refused secret changes nothing but the
   * address's failure counter (outcome 'client_refused').
   */
  clientSecret?: { uid: string; secret: string; address: string };
  /**
   * The scopes asked for, canonical order: undefined keeps the token's; [] (a request that did
   * not parse) is refused like a wider one.
   */
  narrowTo: string[] | undefined;
  /**
   * RFC 8707 §2.2: the resources asked for ([]: none, the new access token keeps the presented
   * one's audience); they must be among the grant's (any, when it named none) and allowed to the
   * token's application.
   */
  resources: string[];
  /** When the request arrived, on the service's clock. */
  receivedAt: Date;
  /** Seconds after a rotation during which the token's own client may retry it (0: none). */
  leeway: number;
  /**
   * Rotate even when the granted scopes hold openid: only inside a transaction that signs the ID
   * token before it commits. Without it such a rotation is refused (outcome 'openid'), unchanged.
   */
  withOpenid: boolean;
  /**
   * The key of the request's DPoP proof (RFC 9449): the new pair is bound to it. A public client's
   * bound refresh token rotates only with a proof of the same key (§5: bound to the key too).
   */
  dpopJkt: string | null;
}

export type RotationResult =
  /** Rotated (`retry`: a fresh pair for a retry within the leeway, the first stamp kept). */
  | {
      outcome: 'rotated';
      retry: boolean;
      issued: IssuedToken;
      userId: number;
      clientUid: string;
      authTime: Date;
      sid?: string;
      amr?: string[];
    }
  | { outcome: 'invalid_grant' | 'invalid_client' | 'invalid_target' }
  /**
   * The grant holds openid and `withOpenid` was not set: nothing changed. `clientApplicationId`:
   * the client, authenticated (by `clientSecret` or before), for the rotation that signs.
   */
  | { outcome: 'openid'; clientApplicationId: number | null }
  /** Rotated before and presented too late: the caller revokes its descendants (revokeDescendants). */
  | { outcome: 'replay'; tokenId: number }
  /** Wider than the token's scopes (`scopes`): nothing changed. */
  | { outcome: 'invalid_scope'; scopes: string[] }
  /** `clientSecret` refused (wrong, unknown client, or the address throttled): nothing rotated. */
  | { outcome: 'client_refused'; check: Exclude<SecretCheck, { ok: true }> }
  /**
   * `clientSecret`'s application binds its tokens to DPoP keys (dpop_bound_access_tokens), which
   * a request needs a proof for: nothing changed, the caller takes the way that checks proofs.
   */
  | { outcome: 'dpop_required' };

interface RotationRow {
  outcome:
    | 'rotated'
    | 'retried'
    | 'invalid_grant'
    | 'invalid_client'
    | 'openid'
    | 'replay'
    | 'invalid_scope'
    | 'invalid_target'
    | 'client_refused'
    | 'dpop_required'
    | null;
  id: number | null;
  scopes: string[] | null;
  client_uid: string | null;
  user_id: number;
  issued_id: number | null;
  issued_scopes: string[] | null;
  issued_created_at: Date | null;
  issued_audience: string[] | null;
  auth_time: Date | null;
  sid: string | null;
  amr: string[] | null;
}

type RotationSlot =
  | SecretCheckSlot
  | 'clientApplicationId'
  | 'receivedAt'
  | 'leeway'
  | 'narrowTo'
  | 'resources'
  | 'withOpenid'
  | 'scopeOrder'
  | 'sentAt'
  | 'dpopJkt'
  | 'presentedDigest'
  | 'accessDigest'
  | 'refreshDigest'
  | 'lifetime'
  | 'retryBudget';

// Built and compiled once per shape (db/statement-templates.ts), as the secret check is: without
// the client's secret checked in it, or with its quick or its counting check (applications.ts).
const rotations = statementTemplates<RotationSlot>(3);
type RotationShape = 'rotate' | SecretCheckTry;

/** The rotation statement; with a secret shape, the client secret check rides along. */
function rotationStatement(slot: SlotOf<RotationSlot>, shape: RotationShape) {
  // The client: authenticated before (a slot), or by this statement's client_check.
  const client =
    shape !== 'rotate'
      ? {
          ctes: sql`${secretCheckCtesOf(slot, shape)},`,
          applicationId: clientCheckSql.authenticatedId(slot),
          refused: sql`${clientCheckSql.authenticatedId(slot)} is null`,
          dpopRequired: clientCheckSql.dpopRequired,
          from: clientCheckSql.from('decided d'),
          columns: sql`, ${clientCheckSql.idColumns}`,
        }
      : {
          ctes: sql``,
          applicationId: sql`${slot('clientApplicationId')}::bigint`,
          refused: sql`false`,
          dpopRequired: sql`false`,
          from: sql`from decided d`,
          columns: sql``,
        };
  // The token's lock first: pg_stat_activity keeps the first 1024 bytes, and tests look for the
  // statement waiting on it there.
  return sql<RotationRow>`
    with
    locked as materialized (
      select t.id, t.application_id, t.user_id, t.scopes, t.revoked_at, t.refreshed_at, t.family_id,
        t.parent_id, t.refresh_retries, t.successor_used_at, root.authorization_code_id, t.created_at, t.dpop_jkt, a.uid as client_uid, a.confidential, u.state as user_state,
        u.current_sign_in_at, t.resources, t.audience, a.allowed_resources
      from oauth_access_tokens t
      join oauth_access_tokens root on root.id = coalesce(t.family_id, t.id)
      left join oauth_applications a on a.id = t.application_id
      left join users u on u.id = t.user_id
      where t.refresh_token_digest = ${slot('presentedDigest')}
      for update of t, root
    ),
    ${client.ctes}
    params as materialized (
      select ${client.applicationId} as client_application_id,
        ${client.refused} as client_refused,
        ${client.dpopRequired} as dpop_required,
        ${slot('receivedAt')}::timestamptz as received_at,
        ${slot('leeway')}::integer as leeway,
        ${slot('narrowTo')}::text[] as narrow_to,
        ${slot('resources')}::text[] as resources,
        ${slot('withOpenid')}::boolean as with_openid,
        ${slot('scopeOrder')}::text[] as scope_order,
        ${slot('sentAt')}::timestamptz as sent_at,
        ${slot('dpopJkt')}::text as dpop_jkt
    ),
    decided as materialized (
      select l.id, l.application_id, l.user_id, l.scopes, l.family_id, l.parent_id, l.authorization_code_id,
        l.created_at, l.client_uid, l.current_sign_in_at, p.sent_at, v.granted, l.resources,
        case when cardinality(p.resources) > 0 then p.resources else l.audience end as audience, case
          -- The client first: a refused secret learns nothing of the token.
          when p.client_refused then 'client_refused'
          when p.dpop_required then 'dpop_required'
          when l.application_id is null then 'invalid_grant'
          when p.client_application_id is not null and l.application_id <> p.client_application_id
            then 'invalid_grant'
          when p.client_application_id is null and (l.client_uid is null or l.confidential) then 'invalid_client'
          when l.revoked_at is not null then 'invalid_grant'
          -- RFC 9449 section 5: a public client's refresh token is bound to its key (before the replay
          -- rule: a thief without the key cannot revoke the chain either).
          when not l.confidential and l.dpop_jkt is not null and l.dpop_jkt is distinct from p.dpop_jkt
            then 'invalid_grant'
          -- Within the leeway but no retry (its successor used, or its 2 retries spent): a replay.
          when l.refreshed_at is not null and not v.retry then
            case when w.within_leeway or l.refreshed_at < p.received_at then 'replay' else 'invalid_grant' end
          when cardinality(v.granted) = 0 or not (v.granted <@ l.scopes) then 'invalid_scope'
          when cardinality(p.resources) > 0 and ((cardinality(l.resources) > 0 and not (p.resources <@ l.resources))
            or (l.allowed_resources is not null and not (p.resources <@ l.allowed_resources))) then 'invalid_target'
          when l.user_state is distinct from 'active' then 'invalid_grant'
          when 'openid' = any(v.granted) and not p.with_openid then 'openid'
          when v.retry then 'retried'
          else 'rotated'
        end as outcome
      from locked l
      cross join params p
      cross join lateral (
        select
          l.refreshed_at is not null and p.leeway > 0
            and p.received_at - l.refreshed_at <= make_interval(secs => p.leeway) as within_leeway
      ) w
      cross join lateral (
        select
          w.within_leeway and l.successor_used_at is null and l.refresh_retries < ${slot('retryBudget')}::integer as retry,
          -- resolveScopes: the narrowing asked for (already in canonical order), else the row's in it.
          coalesce(p.narrow_to, array(
            select s from unnest(l.scopes) with ordinality as given(s, n)
            order by array_position(p.scope_order, s) nulls first, n
          )) as granted
        offset 0 -- computed once: inlined, each of granted's four uses ran the sorting subquery again
      ) v
    ),
    issued as (
      -- No authorization_code_id: the chain's first row holds it (see revokeTokensFromAuthorizationCode).
      insert into oauth_access_tokens (application_id, user_id, token_digest, refresh_token_digest, scopes,
        expires_at, parent_id, family_id, dpop_jkt, resources, audience)
      select d.application_id, d.user_id, ${slot('accessDigest')}, ${slot('refreshDigest')}, d.granted,
        now() + make_interval(secs => ${slot('lifetime')}::integer), d.id, coalesce(d.family_id, d.id),
        p.dpop_jkt, d.resources, d.audience
      from decided d cross join params p
      where d.outcome in ('rotated', 'retried')
      returning id, scopes, created_at, audience
    ),
    -- The row stamped refreshed unless the pair is a retry's, and the token it was rotated from
    -- told that its successor was presented (it may no longer be retried: its client has this
    -- one). One update for both rows: each plan node costs PostgreSQL its set-up per statement.
    -- The parent's stamp is serialised with that token's retries by the chain's lock.
    stamped as (
      update oauth_access_tokens t set
        refreshed_at = case when t.id = d.id and d.outcome = 'rotated'
          then d.sent_at + (clock_timestamp() - statement_timestamp()) else t.refreshed_at end,
        refresh_retries = t.refresh_retries + case when t.id = d.id and d.outcome = 'retried' then 1 else 0 end,
        successor_used_at = case when t.id = d.parent_id then coalesce(t.successor_used_at, now())
          else t.successor_used_at end
      from decided d
      where t.id in (d.id, d.parent_id) and d.outcome in ('rotated', 'retried')
      returning t.id
    )
    select d.outcome, d.id, d.scopes, d.client_uid, d.user_id,
      i.id as issued_id, i.scopes as issued_scopes, i.created_at as issued_created_at, i.audience as issued_audience,
      -- OIDC Core section 12.2: auth_time stays the original sign-in's.
      case when 'openid' = any(i.scopes) then coalesce(c.auth_time, d.current_sign_in_at, d.created_at) end as auth_time,
      -- The browser session of the original sign-in (the ID token's sid), when it was recorded.
      c.sid, c.amr
      ${client.columns}
    ${client.from} left join issued i on true
      left join oauth_authorization_codes c on c.id = d.authorization_code_id and 'openid' = any(i.scopes)
  `;
}

/**
 * Rotate a refresh token in one statement (RFC 6749 §6; the rules are the refresh_token grant's):
 * lock its row (FOR UPDATE) with its user and application, decide, insert the new pair as a child
 * of the row, and stamp the row refreshed unless the pair is a retry's. Of concurrent rotations
 * one wins: a statement blocked on the row lock re-reads the row under READ COMMITTED once the
 * winner commits, and sees its refreshed_at. Every refusal changes nothing (a replay's revocation
 * is the caller's second statement: it must see children committed after this one's snapshot).
 * With `clientSecret`, the same statement authenticates the client first (one round trip for a
 * confidential client's refresh).
 *
 * The chain's first row is locked too: the lock revocation takes (lockChain), so a revocation and
 * a rotation anywhere in the chain never overlap. (Keep the text before FOR UPDATE short: the tests
 * find the waiting statement in pg_stat_activity, which keeps the first 1024 bytes.)
 *
 * The stamp is on the service's clock, like receivedAt, which later presentations compare with it:
 * the time the statement left (holding its connection), plus what the database spent on it until
 * the stamp (the wait for the lock), so a request that arrived while this one waited counts as in
 * flight, not as a replay.
 */
export async function rotateRefreshToken(db: DbOrTrx, input: RotationInput): Promise<RotationResult> {
  const accessToken = randomHex();
  const refreshToken = randomHex();
  const secretCheck = input.clientSecret && secretCheckValues(input.clientSecret);
  const check = secretCheck ?? NO_SECRET_CHECK;
  const presentedDigest = sha256Hex(input.refreshToken);
  const accessDigest = sha256Hex(accessToken);
  const refreshDigest = sha256Hex(refreshToken);
  // The stamp's clock is read once the statement holds its connection (not while it queues for
  // one); run straight on the pool (db/hot-statements.ts) outside a transaction. The values are
  // named, not spread (db/row-picker.ts on Node 20's cost of copying properties).
  const rotate = (shape: RotationShape) =>
    rotations.runHolding<RotationRow>(
      db,
      shape,
      (): Record<RotationSlot, unknown> => ({
        uid: check.uid,
        digest: check.digest,
        key: check.key,
        limit: check.limit,
        windowSeconds: check.windowSeconds,
        clientApplicationId: input.clientApplicationId,
        receivedAt: input.receivedAt,
        leeway: input.leeway,
        narrowTo: input.narrowTo ?? null,
        resources: input.resources,
        withOpenid: input.withOpenid,
        scopeOrder: SCOPE_ORDER,
        dpopJkt: input.dpopJkt,
        presentedDigest,
        accessDigest,
        refreshDigest,
        lifetime: ACCESS_TOKEN_LIFETIME_SECONDS,
        retryBudget: REFRESH_RETRY_BUDGET,
        sentAt: new Date(),
      }),
      (slot) => rotationStatement(slot, shape),
    );
  // A secret: the quick check first; when it did not decide (a wrong secret, an address with
  // failures in its window), the statement again with the check that counts (nothing was changed).
  let { rows } = await rotate(secretCheck ? 'quick-secret' : 'rotate');
  if (secretCheck && !secretCheckDecided(unprefixedClientIdCheck(rows[0]))) ({ rows } = await rotate('with-secret'));
  const row = rows[0];
  let clientApplicationId = input.clientApplicationId;
  if (secretCheck) {
    const check = clientIdCheckOf(secretCheck, unprefixedClientIdCheck(row));
    if (!check.ok) return { outcome: 'client_refused', check };
    clientApplicationId = check.applicationId;
  }
  if (!row?.outcome) return { outcome: 'invalid_grant' };
  switch (row.outcome) {
    case 'rotated':
    case 'retried':
      return {
        outcome: 'rotated',
        retry: row.outcome === 'retried',
        issued: {
          id: row.issued_id as number,
          accessToken,
          refreshToken,
          scopes: row.issued_scopes as string[],
          expiresIn: ACCESS_TOKEN_LIFETIME_SECONDS,
          createdAt: row.issued_created_at as Date,
          audience: row.issued_audience ?? [],
        },
        userId: row.user_id,
        clientUid: row.client_uid as string,
        authTime: row.auth_time as Date,
        sid: row.sid ?? undefined,
        amr: row.amr ?? undefined,
      };
    case 'replay':
      return { outcome: 'replay', tokenId: row.id as number };
    case 'invalid_scope':
      return { outcome: 'invalid_scope', scopes: row.scopes as string[] };
    case 'openid':
      return { outcome: 'openid', clientApplicationId };
    case 'client_refused':
      // clientIdCheckOf agreed with the statement above, or this is a statement bug: refuse.
      return { outcome: 'invalid_client' };
    default:
      return { outcome: row.outcome };
  }
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
 * Lock the first row of `id`'s refresh chain (FOR UPDATE), as every rotation in the chain does
 * (rotateRefreshToken): revocation and rotation serialise on this one row. Held until the caller's
 * transaction ends; a statement after it sees every rotation that committed before it got the lock.
 */
async function lockChain(trx: DbOrTrx, id: number): Promise<void> {
  await sql`
    select root.id from oauth_access_tokens t
    join oauth_access_tokens root on root.id = coalesce(t.family_id, t.id)
    where t.id = ${id}
    for update of root
  `.execute(trx);
}

/**
 * Revoke every token refreshed from `id`, directly or not (RFC 9700 §4.14.2: a replayed refresh
 * token means it leaked, and whoever rotated it since holds a descendant). The replayed token's
 * own access token is left to expire, like every rotated-away access token. Under the chain's
 * lock, so a rotation of a descendant running meanwhile is revoked too (or refused).
 *
 * Every descendant is in the token's chain (family_id, indexed), so the walk down parent_id reads
 * only that chain's rows. The chain's first token is kept while any of its chain lives, but the
 * purge deletes rotated tokens inside the chain once they are dead (retention.ts), so parent_id
 * may name a row that is gone and a walk from the first token could stop short: every other token
 * of a chain descends from its first, so for the first token the descendants are the whole chain.
 * (Any later token dies no later than its descendants, so once one of those may be purged, so may
 * it: past the grace its replay is refused as unknown.)
 */
export async function revokeDescendants(db: DbOrTrx, id: number): Promise<number> {
  return withTransaction(db, async (trx) => {
    await lockChain(trx, id);
    const result = await sql`
      with recursive
      presented as materialized (
        select t.id, coalesce(t.family_id, t.id) as family_id, t.family_id is null as first
        from oauth_access_tokens t where t.id = ${id}
      ),
      chain as materialized (
        select t.id, t.parent_id from oauth_access_tokens t join presented p on t.family_id = p.family_id
      ),
      tree(id) as (
        select c.id from chain c cross join presented p where p.first or c.parent_id = p.id
        union
        select c.id from chain c join tree on c.parent_id = tree.id
      )
      update oauth_access_tokens set revoked_at = now()
      where id in (select id from tree) and revoked_at is null
    `.execute(trx);
    return Number(result.numAffectedRows ?? 0);
  });
}

/**
 * Revoke every token of a refresh chain (RFC 7009 §2.1: revoking a refresh token ends its grant).
 * The chain's lock first, then the revocation in a statement of its own: a rotation that won the
 * lock has committed by then and its pair is in the chain, revoked with it; one that waits for the
 * lock then finds its token revoked (invalid_grant). Either way no token of the chain survives.
 */
export async function revokeTokenFamily(
  db: DbOrTrx,
  token: Pick<AccessTokenRecord, 'id' | 'family_id'>,
): Promise<void> {
  const familyId = token.family_id ?? token.id;
  await withTransaction(db, async (trx) => {
    await lockChain(trx, token.id);
    await trx
      .updateTable('oauth_access_tokens')
      .set({ revoked_at: new Date() })
      .where((eb) => eb.or([eb('id', '=', familyId), eb('family_id', '=', familyId)]))
      .where('revoked_at', 'is', null)
      .execute();
  });
}

/**
 * RFC 6749 §4.1.2: a replayed code revokes every token issued from it (and their refreshes). The
 * token the code was exchanged for names it; the rows refreshed from that token name the token
 * (family_id), not the code: a rotation's insert then checks two keys, not three, and adds no
 * entry to the code's index.
 */
export async function revokeTokensFromAuthorizationCode(db: DbOrTrx, codeId: number): Promise<number> {
  const result = await db
    .updateTable('oauth_access_tokens')
    .set({ revoked_at: new Date() })
    .where((eb) =>
      eb.or([
        eb('authorization_code_id', '=', codeId),
        eb(
          'family_id',
          'in',
          eb
            .selectFrom('oauth_access_tokens as first')
            .select('first.id')
            .where('first.authorization_code_id', '=', codeId),
        ),
      ]),
    )
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** An access token is expired from its expires_at on (the one rule; API authentication uses it too). */
export const accessTokenExpired = (token: Pick<AccessTokenRecord, 'expires_at'>, now = Date.now()): boolean =>
  token.expires_at.getTime() <= now;
