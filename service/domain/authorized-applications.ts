// The applications a user has authorized (GitLab's "Authorized applications", Doorkeeper's
// authorized_applications): each holding a live grant, its scopes and when it was given; revoking
// one ends every token of that application for the user, so consent is asked again.
//
// A live grant is an access token that is not revoked and not rotated away (Doorkeeper counts
// expired ones: the client may still refresh, and the user did consent). The consent skip of
// /oauth/authorize asks the same question, so what this page lists is exactly what skips consent.
import { sql } from 'kysely';
import { withTransaction } from '../db/transaction';
import type { DbOrTrx } from '../db/schema';
import { recordAudit } from './audit';
import { notFound } from './errors';
import { type Page, windowPage } from './page';
import { sortScopes } from './scopes';

export interface AuthorizedApplication {
  uid: string;
  name: string;
  scopes: string[];
  /** The most recent grant. */
  authorizedAt: Date;
}

/**
 * The applications with a live grant, by name: one row per application in SQL, its scopes the
 * union of its live tokens' and its time the latest grant's. `uid` narrows it to one application.
 */
const authorizedSql = (userId: number, uid?: string) => sql<{
  uid: string;
  name: string;
  scopes: string[];
  authorized_at: Date;
  total: string;
}>`
  select a.uid, a.name, coalesce(array_agg(distinct s.scope) filter (where s.scope is not null), '{}') as scopes,
         max(t.created_at) as authorized_at, count(*) over () as total
    from oauth_access_tokens t
    join oauth_applications a on a.id = t.application_id
    left join lateral unnest(t.scopes) as s(scope) on true
   where t.user_id = ${userId} and t.revoked_at is null and t.refreshed_at is null
         ${uid === undefined ? sql`` : sql`and a.uid = ${uid}`}
   group by a.id
   order by a.name, a.id`;

const viewOf = (r: { uid: string; name: string; scopes: string[]; authorized_at: Date }): AuthorizedApplication => ({
  uid: r.uid,
  name: r.name,
  scopes: sortScopes(r.scopes),
  authorizedAt: r.authorized_at,
});

/** One page of the authorized applications (20 a page on their page) and their total, in one statement. */
export async function listAuthorizedApplicationsPage(
  db: DbOrTrx,
  userId: number,
  { limit, offset }: { limit: number; offset: number },
): Promise<Page<AuthorizedApplication>> {
  const { rows } = await sql<{
    uid: string;
    name: string;
    scopes: string[];
    authorized_at: Date;
    total: string;
  }>`${authorizedSql(userId)} limit ${limit} offset ${offset}`.execute(db);
  const page = await windowPage(
    rows,
    async () =>
      (
        await sql<{ n: string }>`select count(distinct application_id) as n from oauth_access_tokens
           where user_id = ${userId} and revoked_at is null and refreshed_at is null`.execute(db)
      ).rows[0].n,
    offset,
  );
  return { total: page.total, rows: page.rows.map(viewOf) };
}

/** The user's live grant of one application (the revoke confirm page), or undefined. */
export async function findAuthorizedApplication(
  db: DbOrTrx,
  userId: number,
  uid: string,
): Promise<AuthorizedApplication | undefined> {
  const { rows } = await authorizedSql(userId, uid).execute(db);
  return rows[0] && viewOf(rows[0]);
}

/** Does the user hold a live grant of this application covering every requested scope? */
export async function hasLiveGrantCovering(
  db: DbOrTrx,
  { applicationId, userId, scopes }: { applicationId: number; userId: number; scopes: readonly string[] },
): Promise<boolean> {
  const row = await db
    .selectFrom('oauth_access_tokens')
    .select('id')
    .where('user_id', '=', userId)
    .where('application_id', '=', applicationId)
    .where('revoked_at', 'is', null)
    .where('refreshed_at', 'is', null)
    .where(sql<boolean>`scopes @> ${sql.val([...scopes])}::text[]`)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Revoke the user's access for an application: every token (access and refresh) dies, and codes
 * not yet exchanged become unusable. Unknown, or nothing live for this user → not found.
 */
export async function revokeAuthorizedApplication(
  db: DbOrTrx,
  userId: number,
  uid: string,
  audit: { actor: string; ipAddress?: string },
): Promise<{ name: string; revokedTokens: number }> {
  return withTransaction(db, async (trx) => {
    const app = await trx
      .selectFrom('oauth_applications')
      .select(['id', 'name'])
      .where('uid', '=', uid)
      .executeTakeFirst();
    if (!app || !(await hasLiveGrantCovering(trx, { applicationId: app.id, userId, scopes: [] })))
      throw notFound('Authorized application not found');
    const now = new Date();
    const revoked = await trx
      .updateTable('oauth_access_tokens')
      .set({ revoked_at: now })
      .where('user_id', '=', userId)
      .where('application_id', '=', app.id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    await trx
      .updateTable('oauth_authorization_codes')
      .set({ used_at: now })
      .where('user_id', '=', userId)
      .where('application_id', '=', app.id)
      .where('used_at', 'is', null)
      .execute();
    await recordAudit(trx, {
      ...audit,
      action: 'oauth_application.revoke_authorization',
      targetType: 'oauth_application',
      targetId: uid,
      details: { user_id: userId },
    });
    return { name: app.name, revokedTokens: Number(revoked.numUpdatedRows) };
  });
}
