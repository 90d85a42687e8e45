// Who may see a group or a project (contract §4): public and internal ones are visible to every
// signed-in user; a private one only to members of it or of any ancestor group (for a project:
// members of the project, of its group or of the group's ancestors). Admins see everything, as
// in GitLab without Admin Mode. Callers answer "not visible" exactly like "missing", so the
// existence of a private group or project never leaks.
import { type RawBuilder, sql } from 'kysely';
import { type DbOrTrx, GROUP_COLUMNS, type Group, PROJECT_COLUMNS, type Project, type User } from '../db/schema';
import { sourcesCte } from './notifications/sources';

/** The parts of a user that decide visibility. */
export type Viewer = Pick<User, 'id' | 'is_admin'>;

/**
 * An application's own token holding `notify` (client_credentials, no user): it stands where an
 * administrator's token stands on the recipients API, so it sees what an administrator sees. No
 * user has id 0, so no membership ever matches it.
 */
export const APPLICATION_VIEWER: Viewer = { id: 0, is_admin: true };

/**
 * A GitLab `:id`: a positive integer is an id, anything else a full path (already URL-decoded,
 * `my-group/sub/my-project`), matched case-insensitively.
 */
export const isNumericId = (idOrPath: string): boolean => /^[1-9]\d{0,15}$/.test(idOrPath);

/**
 * Could this be a full path at all? Anything else is simply not found, without a query:
 * PostgreSQL rejects NUL in text (a 500, were it sent), and no path is longer than this.
 */
const plausiblePath = (path: string): boolean => path.length > 0 && path.length <= 2048 && !path.includes('\u0000');

/** The group with this id or full path if the viewer may see it; undefined when missing or hidden. */
export async function findVisibleGroup(db: DbOrTrx, viewer: Viewer, idOrPath: string): Promise<Group | undefined> {
  const visible = visibleNamespaceIds(viewer, 'group', idOrPath);
  if (!visible) return undefined;
  return db.selectFrom('groups').select(GROUP_COLUMNS).where(sql<boolean>`id in (${visible})`).executeTakeFirst();
}

/** The project with this id or full path if the viewer may see it; undefined when missing or hidden. */
export async function findVisibleProject(db: DbOrTrx, viewer: Viewer, idOrPath: string): Promise<Project | undefined> {
  const visible = visibleNamespaceIds(viewer, 'project', idOrPath);
  if (!visible) return undefined;
  return db.selectFrom('projects').select(PROJECT_COLUMNS).where(sql<boolean>`id in (${visible})`).executeTakeFirst();
}

/**
 * The visibility rule as ONE SQL predicate, the only copy: may the viewer see the namespace whose
 * own visibility is `visibility`, whose group is `groupId` (the group itself, or a project's group)
 * and, for a project, whose id is `projectId`? Public and internal: yes; private: admins, and
 * members of the project or of its group or any ancestor group. Every argument is an expression,
 * so the same predicate serves one viewer over many rows (listing.ts, the notifications page), one
 * row for one viewer (visibleNamespaceIds) and many viewers of one target (the recipients).
 */
export function visibleSql(
  viewer: { id: RawBuilder<unknown>; isAdmin: RawBuilder<unknown>; member?: RawBuilder<unknown> },
  ns: { visibility: RawBuilder<unknown>; groupId: RawBuilder<unknown>; projectId?: RawBuilder<unknown> },
): RawBuilder<boolean> {
  // Two EXISTS, each an index probe on members (user_id, group_id) / (user_id, project_id); OFFSET 0
  // keeps each one a probe per row instead of letting the planner hash the members of the whole
  // tree (the recipients check thousands of candidates against one target: candidates, not members).
  const projectMember = ns.projectId
    ? sql` or exists (select 1 from members m where m.user_id = ${viewer.id} and m.project_id = ${ns.projectId} offset 0)`
    : sql``;
  const member = sql`(exists (
      with recursive ${sourcesCte({ groups: sql`select ${ns.groupId}` })}
      select 1 from members m where m.user_id = ${viewer.id} and m.group_id in (select source_id from sources) offset 0
    )${projectMember})`;
  // `viewer.member`: the membership already known (memberAtSourcesSql), or null where it is not.
  const isMember = viewer.member ? sql`coalesce(${viewer.member}, ${member})` : member;
  return sql<boolean>`(${ns.visibility} <> 'private' or ${viewer.isAdmin} or ${isMember})`;
}

/**
 * The membership visibleSql checks — of the target itself or of any group above it — for the user
 * `userId` on the target (`targetType`, `targetId`) of a `sources` CTE in scope (sources.ts), for
 * statements that walk many targets at once (the notification subscriptions keep it per target and
 * user, and pass it back to visibleSql as `viewer.member`).
 */
export const memberAtSourcesSql = (
  userId: RawBuilder<unknown>,
  targetType: RawBuilder<unknown>,
  targetId: RawBuilder<unknown>,
): RawBuilder<boolean> =>
  sql<boolean>`exists (
    select 1 from sources ms join members m
        on (ms.source_type = 'group' and m.group_id = ms.source_id) or (ms.source_type = 'project' and m.project_id = ms.source_id)
     where ms.target_type = ${targetType} and ms.target_id = ${targetId} and m.user_id = ${userId})`;

/** visibleSql for one known viewer (its values, or a statement template's slots for them). */
export const viewerSql = (viewer: { id: unknown; is_admin: unknown }) => ({
  id: sql`${viewer.id}::bigint`,
  isAdmin: sql`${viewer.is_admin}::boolean`,
});

/** How a GitLab `:id` names its group or project: by id, or by full path (matched lowercased). */
export type NamespaceTarget = { by: 'id'; value: number } | { by: 'path'; value: string };

/** The target an `:id` names; undefined when no such path can exist (no query needed). */
export function namespaceTarget(idOrPath: string): NamespaceTarget | undefined {
  if (!plausiblePath(idOrPath)) return undefined;
  return isNumericId(idOrPath) ? { by: 'id', value: Number(idOrPath) } : { by: 'path', value: idOrPath.toLowerCase() };
}

/**
 * `select id` of the group or project with this id or full path when the viewer may see it (by
 * visibleSql): what findVisible* and the notification-settings reads and upserts use (a
 * write touches only a visible target without a round trip to find it first). Undefined: no such
 * path can exist.
 */
export function visibleNamespaceIds(
  viewer: Viewer,
  kind: 'group' | 'project',
  idOrPath: string,
): RawBuilder<{ id: number }> | undefined {
  const target = namespaceTarget(idOrPath);
  return target && visibleNamespaceIdsSql(viewer, kind, target.by, target.value);
}

/**
 * visibleNamespaceIds by the target's kind of match and value (`value` and the viewer's fields may
 * be a statement template's slots).
 */
export function visibleNamespaceIdsSql(
  viewer: { id: unknown; is_admin: unknown },
  kind: 'group' | 'project',
  by: NamespaceTarget['by'],
  value: unknown,
): RawBuilder<{ id: number }> {
  const table = kind === 'group' ? sql`groups` : sql`projects`;
  const pathColumn = kind === 'group' ? sql`full_path` : sql`path_with_namespace`;
  const match = by === 'id' ? sql`n.id = ${value}` : sql`lower(n.${pathColumn}) = ${value}`;
  const visible = visibleSql(viewerSql(viewer), {
    visibility: sql`n.visibility`,
    groupId: kind === 'group' ? sql`n.id` : sql`n.group_id`,
    ...(kind === 'project' ? { projectId: sql`n.id` } : {}),
  });
  return sql<{ id: number }>`select n.id from ${table} n where ${match} and ${visible}`;
}
