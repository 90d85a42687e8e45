// Personal access tokens (glpat-…): created for a user with scopes and an optional expiry date,
// stored as a SHA-256 digest, shown once; revoked, and rotated (the old token revoked, a new one
// linked to it). The rules are here once for the account page, the CLI and /api/v4.
import { sql } from 'kysely';
import { withTransaction } from '../db/transaction';
import type { DbOrTrx } from '../db/schema';
import { auditInsertFrom, recordAudit } from './audit';
import { invalid, invalidField, notFound } from './errors';
import { windowPage } from './page';
import { requireName } from './names';
import { PERSONAL_ACCESS_TOKEN_SCOPES, personalAccessTokenScopesFor, requireScopes, sortScopes } from './scopes';
import { newPersonalAccessToken, sha256Hex } from './secrets';
import type { MailSettings } from './mail/account-messages';
import { enqueueSecurityAlert } from './security-alerts';
import { getUserByUsername } from './users';

/** A new token's expiry unless one is chosen: 30 days from now (UTC), on the page and in the CLI. */
export const defaultTokenExpiry = (now = new Date()): string =>
  new Date(now.getTime() + 30 * 86_400_000).toISOString().slice(0, 10);

const COLUMNS = ['id', 'user_id', 'name', 'scopes', 'expires_at', 'revoked_at', 'last_used_at', 'created_at'] as const;

export interface PersonalAccessTokenRow {
  id: number;
  user_id: number;
  name: string;
  scopes: string[];
  expires_at: string | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_at: Date;
}

/** GitLab's default lifetime of a rotated token when none is asked for (RotateService::EXPIRATION_PERIOD). */
export const ROTATION_DEFAULT_LIFETIME_DAYS = 7;

const isoDay = (d: Date): string => d.toISOString().slice(0, 10);

/** A calendar date YYYY-MM-DD that exists (2026-02-30 does not). */
export const isCalendarDate = (value: string): boolean => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const parsed = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && isoDay(parsed) === value;
};

/**
 * The expiry of a new token: a real date, today or later (a token dated today works through the
 * end of the day, UTC). The error names the field, for the API's {"message":{"expires_at":[…]}}.
 */
function requireExpiry(expiresAt: string, now: Date): string {
  if (!isCalendarDate(expiresAt))
    throw invalid(`expires-at "${expiresAt}" is not a date (YYYY-MM-DD)`, { expires_at: ['is not a date'] });
  if (expiresAt < isoDay(now))
    throw invalid(`expires-at ${expiresAt} is in the past`, { expires_at: ['must not be in the past'] });
  return expiresAt;
}

export interface CreateTokenInput {
  username: string;
  name: string;
  scopes: string | string[];
  /** YYYY-MM-DD; the token works through that day (UTC). */
  expiresAt?: string | null;
  actor?: string;
  ipAddress?: string;
  now?: Date;
  /**
   * The person's own token (the account page): an expiry is required, from tomorrow to
   * MAX_SELF_SERVICE_LIFETIME_DAYS ahead (selfServiceExpiryRange).
   */
  selfService?: boolean;
  /** What the security alert needs (PUBLIC_URL, MAIL_FROM); every service and CLI caller passes it (tests may not). */
  mail?: MailSettings;
}

export async function createPersonalAccessToken(db: DbOrTrx, input: CreateTokenInput) {
  return withTransaction(db, async (db) => {
    const name = requireName(input.name);
    const scopes = requireScopes(input.scopes, PERSONAL_ACCESS_TOKEN_SCOPES);
    const now = input.now ?? new Date();
    const expiresAt = input.selfService
      ? requireSelfServiceExpiry(input.expiresAt ?? '', now)
      : input.expiresAt == null
        ? null
        : requireExpiry(input.expiresAt, now);
    const user = await getUserByUsername(db, input.username);
    const available = personalAccessTokenScopesFor(user);
    if (!scopes.every((s) => available.includes(s)))
      throw invalid('the sudo scope is for administrators only', { scopes: ['can only contain available scopes'] });
    const token = newPersonalAccessToken();
    const row = await db
      .insertInto('personal_access_tokens')
      .values({
        user_id: user.id,
        name,
        token_digest: sha256Hex(token),
        scopes: sortScopes(scopes),
        expires_at: expiresAt,
      })
      .returning(COLUMNS)
      .executeTakeFirstOrThrow();
    if (input.mail)
      await enqueueSecurityAlert(db, user, { kind: 'personal_access_token_created', tokenName: name }, input.mail);
    await recordAudit(db, {
      actor: input.actor ?? 'system',
      action: 'personal_access_token.create',
      targetType: 'personal_access_token',
      targetId: row.id,
      details: { user: user.username, name, scopes },
      ipAddress: input.ipAddress,
    });
    return { token, record: row, user };
  });
}

export async function listPersonalAccessTokens(db: DbOrTrx, username?: string) {
  let q = db
    .selectFrom('personal_access_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .select([
      't.id',
      't.user_id',
      't.name',
      't.scopes',
      't.expires_at',
      't.revoked_at',
      't.last_used_at',
      't.created_at',
      'u.username',
    ])
    .orderBy('t.id');
  if (username !== undefined) {
    const user = await getUserByUsername(db, username);
    q = q.where('t.user_id', '=', user.id);
  }
  return q.execute();
}

export async function revokePersonalAccessToken(db: DbOrTrx, id: number, actor = 'system', ipAddress?: string) {
  return withTransaction(db, async (db) => {
    const row = await db
      .updateTable('personal_access_tokens')
      .set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(new Date())) }))
      .where('id', '=', id)
      .returning(COLUMNS)
      .executeTakeFirst();
    if (!row) throw notFound(`personal access token ${id} not found`);
    await recordAudit(db, {
      actor,
      action: 'personal_access_token.revoke',
      targetType: 'personal_access_token',
      targetId: id,
      ipAddress,
    });
    return row;
  });
}

/** A PAT dated YYYY-MM-DD is valid through the end of that day, UTC. */
export const personalAccessTokenExpired = (expiresAt: string | null, now = new Date()): boolean =>
  expiresAt !== null && now.toISOString().slice(0, 10) > expiresAt;

export function personalAccessTokenSummary(
  row: {
    id: number;
    name: string;
    scopes: string[];
    expires_at: string | null;
    revoked_at: Date | null;
    last_used_at: Date | null;
    created_at: Date;
  },
  username: string,
) {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes,
    expires_at: row.expires_at,
    revoked: row.revoked_at !== null,
    active: row.revoked_at === null && !personalAccessTokenExpired(row.expires_at),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    user: username,
  };
}

/** Self-service tokens must expire, within a year (GitLab's maximum lifetime). */
export const MAX_SELF_SERVICE_LIFETIME_DAYS = 365;

/** The expiries a user may choose for their own token: from tomorrow to 365 days ahead (UTC dates). */
export function selfServiceExpiryRange(now = new Date()): { earliest: string; latest: string } {
  return {
    earliest: isoDay(new Date(now.getTime() + 86_400_000)),
    latest: isoDay(new Date(now.getTime() + MAX_SELF_SERVICE_LIFETIME_DAYS * 86_400_000)),
  };
}

/** A self-service expiry, or an error naming `expires_at` (with GitLab's field wording for the API). */
function requireSelfServiceExpiry(expiresAt: string, now: Date): string {
  const { earliest, latest } = selfServiceExpiryRange(now);
  if (!expiresAt) throw invalidField('expires_at', "can't be blank");
  if (!isCalendarDate(expiresAt))
    throw invalid(`expires-at "${expiresAt}" is not a date (YYYY-MM-DD)`, { expires_at: ['is not a date'] });
  if (expiresAt < earliest || expiresAt > latest)
    throw invalid(`expires-at ${expiresAt} is not between ${earliest} and ${latest}`, {
      expires_at: [`must be between ${earliest} and ${latest}`],
    });
  return expiresAt;
}

/** A user's own active tokens (not revoked, not expired), newest first. */
export async function listActivePersonalAccessTokens(db: DbOrTrx, userId: number, now = new Date()) {
  const rows = await db
    .selectFrom('personal_access_tokens')
    .select(COLUMNS)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .orderBy('id', 'desc')
    .execute();
  return rows.filter((r) => !personalAccessTokenExpired(r.expires_at, now));
}

/** One of the user's own active tokens, or undefined (someone else's id reads as missing). */
export const findOwnActivePersonalAccessToken = async (db: DbOrTrx, userId: number, id: number) =>
  (await listActivePersonalAccessTokens(db, userId)).find((t) => t.id === id);

/** One token by id (any state), or undefined. Ids beyond bigint name no token. */
export const findPersonalAccessTokenById = async (
  db: DbOrTrx,
  id: number,
): Promise<PersonalAccessTokenRow | undefined> =>
  Number.isSafeInteger(id) && id > 0
    ? db.selectFrom('personal_access_tokens').select(COLUMNS).where('id', '=', id).executeTakeFirst()
    : undefined;

export const PERSONAL_ACCESS_TOKEN_SORTS = [
  'created_asc',
  'created_desc',
  'expires_asc',
  'expires_desc',
  'last_used_asc',
  'last_used_desc',
  'name_asc',
  'name_desc',
] as const;
export type PersonalAccessTokenSort = (typeof PERSONAL_ACCESS_TOKEN_SORTS)[number];

/** GitLab's PersonalAccessTokensFinder filters (bounds inclusive, as its scopes; expires_before exclusive). */
export interface PersonalAccessTokenFilter {
  userId?: number;
  revoked?: boolean;
  state?: 'active' | 'inactive';
  createdBefore?: Date;
  createdAfter?: Date;
  lastUsedBefore?: Date;
  lastUsedAfter?: Date;
  expiresBefore?: string;
  expiresAfter?: string;
  search?: string;
  sort?: PersonalAccessTokenSort;
  limit: number;
  offset: number;
}

/** `%term%` for ILIKE, with the term's own wildcards escaped. */
const likePattern = (term: string) => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** One page of tokens matching the filter, with the total (GitLab's order: id, unless `sort`). */
export async function listPersonalAccessTokensPage(
  db: DbOrTrx,
  filter: PersonalAccessTokenFilter,
  now = new Date(),
): Promise<{ total: number; rows: PersonalAccessTokenRow[] }> {
  const today = isoDay(now);
  let q = db.selectFrom('personal_access_tokens');
  if (filter.userId !== undefined) q = q.where('user_id', '=', filter.userId);
  if (filter.revoked !== undefined) q = q.where('revoked_at', filter.revoked ? 'is not' : 'is', null);
  // Active: neither revoked nor expired (a token dated today still works today).
  if (filter.state === 'active')
    q = q
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>=', today)]));
  if (filter.state === 'inactive')
    q = q.where((eb) => eb.or([eb('revoked_at', 'is not', null), eb('expires_at', '<', today)]));
  if (filter.createdBefore) q = q.where('created_at', '<=', filter.createdBefore);
  if (filter.createdAfter) q = q.where('created_at', '>=', filter.createdAfter);
  if (filter.lastUsedBefore) q = q.where('last_used_at', '<=', filter.lastUsedBefore);
  if (filter.lastUsedAfter) q = q.where('last_used_at', '>=', filter.lastUsedAfter);
  if (filter.expiresBefore) q = q.where('expires_at', '<', filter.expiresBefore);
  if (filter.expiresAfter) q = q.where('expires_at', '>=', filter.expiresAfter);
  if (filter.search) q = q.where('name', 'ilike', likePattern(filter.search));
  const [column, direction] = {
    created_asc: ['created_at', 'asc'],
    created_desc: ['created_at', 'desc'],
    expires_asc: ['expires_at', 'asc'],
    expires_desc: ['expires_at', 'desc'],
    last_used_asc: ['last_used_at', 'asc'],
    last_used_desc: ['last_used_at', 'desc'],
    name_asc: ['name', 'asc'],
    name_desc: ['name', 'desc'],
  }[filter.sort ?? 'created_asc'] as ['created_at' | 'expires_at' | 'last_used_at' | 'name', 'asc' | 'desc'];
  const ordered = filter.sort
    ? q.orderBy(column, (ob) => (direction === 'asc' ? ob.asc() : ob.desc()).nullsLast()).orderBy('id', direction)
    : q.orderBy('id', 'asc');
  const rows = await ordered
    .select([...COLUMNS, sql<string>`count(*) over ()`.as('total')])
    .limit(filter.limit)
    .offset(filter.offset)
    .execute();
  return windowPage(rows, async () => (await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
}

export interface RotateTokenInput {
  /** YYYY-MM-DD; default: a week from today (GitLab's default). */
  expiresAt?: string | null;
  actor?: string;
  ipAddress?: string;
  now?: Date;
}

/**
 * Rotate a token (GitLab's PersonalAccessTokens::RotateService): the old token is revoked and a new
 * one with the same name, scopes and owner is made, linked to it, in one transaction. A revoked or
 * expired token cannot be rotated; concurrent rotations of one token: one wins (the row is locked).
 */
export async function rotatePersonalAccessToken(db: DbOrTrx, id: number, input: RotateTokenInput = {}) {
  const now = input.now ?? new Date();
  return withTransaction(db, async (db) => {
    const old = Number.isSafeInteger(id)
      ? await db
          .selectFrom('personal_access_tokens as t')
          .innerJoin('users as u', 'u.id', 't.user_id')
          .select(['t.id', 't.user_id', 't.name', 't.scopes', 't.expires_at', 't.revoked_at', 'u.username'])
          .where('t.id', '=', id)
          .forUpdate('t')
          .executeTakeFirst()
      : undefined;
    if (!old) throw notFound(`personal access token ${id} not found`);
    if (old.revoked_at !== null) throw invalid('Token already revoked');
    if (personalAccessTokenExpired(old.expires_at, now)) throw invalid('Token already expired');
    const expiresAt =
      input.expiresAt == null
        ? isoDay(new Date(now.getTime() + ROTATION_DEFAULT_LIFETIME_DAYS * 86_400_000))
        : requireExpiry(input.expiresAt, now);
    await db.updateTable('personal_access_tokens').set({ revoked_at: now }).where('id', '=', old.id).execute();
    const token = newPersonalAccessToken();
    const record = await db
      .insertInto('personal_access_tokens')
      .values({
        user_id: old.user_id,
        name: old.name,
        token_digest: sha256Hex(token),
        scopes: old.scopes,
        expires_at: expiresAt,
        previous_personal_access_token_id: old.id,
      })
      .returning(COLUMNS)
      .executeTakeFirstOrThrow();
    await recordAudit(db, {
      actor: input.actor ?? 'system',
      action: 'personal_access_token.rotate',
      targetType: 'personal_access_token',
      targetId: record.id,
      details: { user: old.username, name: old.name, previous_id: old.id },
      ipAddress: input.ipAddress,
    });
    return { token, record, username: old.username };
  });
}

/**
 * GitLab's automatic reuse detection (PersonalAccessTokens::RevokeTokenFamilyService): a token
 * revoked by rotation was presented, so it may have been stolen — every live token rotated from
 * it, at any depth, is revoked. Returns the ids revoked (none when the chain was already dead).
 */
export async function revokeRotatedTokenFamily(
  db: DbOrTrx,
  presentedId: number,
  audit: { ipAddress?: string } = {},
): Promise<number[]> {
  // One statement, no transaction: it runs on the request path of every revoked token presented,
  // and the revocation and its audit event commit together or not at all.
  const { rows } = await sql<{ id: number }>`
    with recursive family as (
      select id from personal_access_tokens where previous_personal_access_token_id = ${presentedId}
      union all
      select t.id from personal_access_tokens t join family f on t.previous_personal_access_token_id = f.id
    ), revoked as (
      update personal_access_tokens set revoked_at = now()
      where id in (select id from family) and revoked_at is null
      returning id
    ), summary as (
      select jsonb_agg(id order by id) as ids from revoked having count(*) > 0
    ), audited as (
      ${auditInsertFrom('summary', {
        actor: 'system',
        action: 'personal_access_token.revoke_family',
        targetType: 'personal_access_token',
        targetId: sql`${presentedId}::bigint`,
        details: sql`jsonb_build_object('reason', ${'a token revoked by rotation was presented'}::text, 'revoked_ids', summary.ids)`,
        ipAddress: audit.ipAddress,
      })}
    )
    select id from revoked
  `.execute(db);
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}
