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
import { sortScopes } from './scopes';

export interface AuthorizedApplication {
  uid: string;
  name: string;
  scopes: string[];
  /** The most recent grant. */
  authorizedAt: Date;
}

export async function listAuthorizedApplications(db: DbOrTrx, userId: number): Promise<AuthorizedApplication[]> {
  // One row per live token (few per user); merged per application here.
  const rows = await db
    .selectFrom('oauth_access_tokens as t')
    .innerJoin('oauth_applications as a', 'a.id', 't.application_id')
    .select(['a.uid', 'a.name', 't.scopes', 't.created_at'])
    .where('t.user_id', '=', userId)
    .where('t.revoked_at', 'is', null)
    .where('t.refreshed_at', 'is', null)
    .orderBy('a.name')
    .orderBy('a.id')
    .execute();
  const byApp = new Map<string, AuthorizedApplication>();
  for (const r of rows) {
    const seen = byApp.get(r.uid);
    if (!seen) {
      byApp.set(r.uid, { uid: r.uid, name: r.name, scopes: sortScopes(r.scopes), authorizedAt: r.created_at });
      continue;
    }
    seen.scopes = sortScopes([...new Set([...seen.scopes, ...r.scopes])]);
    if (r.created_at > seen.authorizedAt) seen.authorizedAt = r.created_at;
  }
  return [...byApp.values()];
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
