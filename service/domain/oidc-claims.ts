// The OpenID Connect claims about a user (OIDC Core §5.1, with GitLab's claim set): `profile`
// gives name, nickname, preferred_username, website, profile, picture, groups (and, in the ID
// token only, groups_direct); `email` gives email and email_verified. Empty values are left out,
// as Doorkeeper's OpenID Connect does.
import { sql } from 'kysely';
import type { DbOrTrx, User } from '../db/schema';

export type ClaimsTarget = 'id_token' | 'userinfo';

/**
 * GitLab's `groups`: the full paths of every group the user belongs to, directly or as a member of
 * an ancestor; `groups_direct`: the direct memberships only. Sorted, one query.
 */
export async function groupPaths(db: DbOrTrx, userId: number): Promise<{ all: string[]; direct: string[] }> {
  const rows = await sql<{ full_path: string; direct: boolean }>`
    with direct as (
      select g.full_path from members m join groups g on g.id = m.group_id where m.user_id = ${userId}
    )
    select g.full_path, exists (select 1 from direct d where d.full_path = g.full_path) as direct
    from groups g
    where exists (
      select 1 from direct d where g.full_path = d.full_path or g.full_path like replace(replace(d.full_path, '%', '\\%'), '_', '\\_') || '/%'
    )
    order by g.full_path
  `.execute(db);
  return { all: rows.rows.map((r) => r.full_path), direct: rows.rows.filter((r) => r.direct).map((r) => r.full_path) };
}

export async function userClaims(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'username' | 'name' | 'email' | 'avatar_url' | 'confirmed_at'>,
  scopes: readonly string[],
  publicUrl: string,
  target: ClaimsTarget,
): Promise<Record<string, unknown>> {
  const claims: Record<string, unknown> = { sub: String(user.id) };
  if (scopes.includes('profile')) {
    const groups = await groupPaths(db, user.id);
    claims.name = user.name;
    claims.nickname = user.username;
    claims.preferred_username = user.username;
    // `website`: Lanyard keeps no website for users, and empty claims are omitted.
    claims.profile = `${publicUrl}/${encodeURIComponent(user.username)}`;
    if (user.avatar_url) claims.picture = user.avatar_url;
    claims.groups = groups.all;
    if (target === 'id_token') claims.groups_direct = groups.direct;
  }
  if (scopes.includes('email')) {
    claims.email = user.email;
    // users.confirmed_at is the primary address's confirmation: only a confirmed address can become
    // primary (emails.ts), and operator-created accounts count as confirmed (migration 0015).
    claims.email_verified = user.confirmed_at !== null;
  }
  return claims;
}
