// Personal access tokens (glpat-…): created for a user with scopes and an optional expiry date,
// stored as a SHA-256 digest, shown once.
import { withTransaction } from '../db/transaction';
import type { DbOrTrx } from '../db/schema';
import { recordAudit } from './audit';
import { invalidField, notFound } from './errors';
import { requireName } from './names';
import { PERSONAL_ACCESS_TOKEN_SCOPES, requireScopes, SUDO_SCOPE, sortScopes } from './scopes';
import { newPersonalAccessToken, sha256Hex } from './secrets';
import { getUserByUsername } from './users';

/** A new token's expiry unless one is chosen: 30 days from now (UTC), on the page and in the CLI. */
export const defaultTokenExpiry = (now = new Date()): string =>
  new Date(now.getTime() + 30 * 86_400_000).toISOString().slice(0, 10);

const COLUMNS = ['id', 'user_id', 'name', 'scopes', 'expires_at', 'revoked_at', 'last_used_at', 'created_at'] as const;

export interface CreateTokenInput {
  username: string;
  name: string;
  scopes: string | string[];
  /** YYYY-MM-DD; the token works through that day (UTC). */
  expiresAt?: string | null;
  actor?: string;
  now?: Date;
}

export async function createPersonalAccessToken(db: DbOrTrx, input: CreateTokenInput) {
  return withTransaction(db, async (db) => {
    const name = requireName(input.name);
    const scopes = requireScopes(input.scopes, PERSONAL_ACCESS_TOKEN_SCOPES);
    const expiresAt = input.expiresAt ?? null;
    if (expiresAt !== null) {
      const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(expiresAt);
      const parsed = d ? new Date(`${expiresAt}T00:00:00Z`) : undefined;
      if (!d || !parsed || Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== expiresAt) {
        throw invalidField('expires_at', `expires-at "${expiresAt}" is not a date (YYYY-MM-DD)`);
      }
      const today = (input.now ?? new Date()).toISOString().slice(0, 10);
      if (expiresAt < today) throw invalidField('expires_at', `expires-at ${expiresAt} is in the past`);
    }
    const user = await getUserByUsername(db, input.username);
    if (scopes.includes(SUDO_SCOPE) && !user.is_admin)
      throw invalidField('scopes', 'the sudo scope is for administrators only');
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
    await recordAudit(db, {
      actor: input.actor ?? 'system',
      action: 'personal_access_token.create',
      targetType: 'personal_access_token',
      targetId: row.id,
      details: { user: user.username, name, scopes },
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

export async function revokePersonalAccessToken(db: DbOrTrx, id: number, actor = 'system') {
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

/** The expiry a user may choose for their own token: a date from tomorrow to 365 days ahead. */
export function selfServiceExpiryProblem(expiresAt: string, now = new Date()): string | undefined {
  const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(expiresAt);
  const parsed = d ? new Date(`${expiresAt}T00:00:00Z`) : undefined;
  if (!parsed || Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== expiresAt)
    return 'Expiration date must be a date (YYYY-MM-DD).';
  const today = now.toISOString().slice(0, 10);
  const latest = new Date(now.getTime() + MAX_SELF_SERVICE_LIFETIME_DAYS * 86_400_000).toISOString().slice(0, 10);
  if (expiresAt <= today) return 'Expiration date must be in the future.';
  if (expiresAt > latest)
    return `Expiration date must be at most ${MAX_SELF_SERVICE_LIFETIME_DAYS} days from today (${latest}).`;
  return undefined;
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
