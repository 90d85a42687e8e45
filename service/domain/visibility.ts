// Who may see a group or a project (contract §4): public and internal ones are visible to every
// signed-in user; a private one only to members of it or of any ancestor group (for a project:
// members of the project, of its group or of the group's ancestors). Admins see everything, as
// in GitLab without Admin Mode. Callers answer "not visible" exactly like "missing", so the
// existence of a private group or project never leaks.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx, Group, Project, User } from '../db/schema';
import { findGroupByFullPath, findGroupById, findProjectById, findProjectByPath } from './namespaces';

/** The parts of a user that decide visibility. */
export type Viewer = Pick<User, 'id' | 'is_admin'>;

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

/** True when the user is a member of the group or of one of its ancestors (one query). */
async function isMemberOfGroupOrAncestor(
  db: DbOrTrx,
  userId: number,
  groupId: number,
  projectId?: number,
): Promise<boolean> {
  // The walk up the group tree and the membership test run as one recursive query.
  const { rows } = await sql<{ member: boolean }>`
    with recursive ancestors as (
      select id, parent_id from groups where id = ${groupId}
      union
      select g.id, g.parent_id from groups g join ancestors a on g.id = a.parent_id
    )
    select exists (
      select 1 from members m
      where m.user_id = ${userId}
        and (m.group_id in (select id from ancestors)${projectId === undefined ? sql`` : sql` or m.project_id = ${projectId}`})
    ) as member
  `.execute(db);
  return rows[0]?.member === true;
}

export async function canSeeGroup(
  db: DbOrTrx,
  viewer: Viewer,
  group: Pick<Group, 'id' | 'visibility'>,
): Promise<boolean> {
  if (group.visibility !== 'private' || viewer.is_admin) return true;
  return isMemberOfGroupOrAncestor(db, viewer.id, group.id);
}

export async function canSeeProject(
  db: DbOrTrx,
  viewer: Viewer,
  project: Pick<Project, 'id' | 'group_id' | 'visibility'>,
): Promise<boolean> {
  if (project.visibility !== 'private' || viewer.is_admin) return true;
  return isMemberOfGroupOrAncestor(db, viewer.id, project.group_id, project.id);
}

/** The group with this id or full path if the viewer may see it; undefined when missing or hidden. */
export async function findVisibleGroup(db: DbOrTrx, viewer: Viewer, idOrPath: string): Promise<Group | undefined> {
  if (!plausiblePath(idOrPath)) return undefined;
  const group = isNumericId(idOrPath)
    ? await findGroupById(db, Number(idOrPath))
    : await findGroupByFullPath(db, idOrPath);
  return group && (await canSeeGroup(db, viewer, group)) ? group : undefined;
}

/** The project with this id or full path if the viewer may see it; undefined when missing or hidden. */
export async function findVisibleProject(db: DbOrTrx, viewer: Viewer, idOrPath: string): Promise<Project | undefined> {
  if (!plausiblePath(idOrPath)) return undefined;
  const project = isNumericId(idOrPath)
    ? await findProjectById(db, Number(idOrPath))
    : await findProjectByPath(db, idOrPath);
  return project && (await canSeeProject(db, viewer, project)) ? project : undefined;
}

/**
 * `select id` of the group or project with this id or full path when the viewer may see it (the
 * same rules as findVisibleGroup/findVisibleProject, as SQL), for a write that must touch only a
 * visible one and should not spend a round trip finding it first. Undefined: no such path can exist.
 */
export function visibleNamespaceIds(
  viewer: Viewer,
  kind: 'group' | 'project',
  idOrPath: string,
): RawBuilder<{ id: number }> | undefined {
  if (!plausiblePath(idOrPath)) return undefined;
  const table = kind === 'group' ? sql`groups` : sql`projects`;
  const pathColumn = kind === 'group' ? sql`full_path` : sql`path_with_namespace`;
  const match = isNumericId(idOrPath)
    ? sql`n.id = ${Number(idOrPath)}`
    : sql`lower(n.${pathColumn}) = ${idOrPath.toLowerCase()}`;
  const start = kind === 'group' ? sql`n.id` : sql`n.group_id`;
  const projectMember = kind === 'project' ? sql` or m.project_id = n.id` : sql``;
  return sql<{
    id: number;
  }>`select n.id from ${table} n where ${match} and (n.visibility <> 'private' or ${viewer.is_admin}
    or exists (
      with recursive ancestors as (
        select id, parent_id from groups where id = ${start}
        union
        select g.id, g.parent_id from groups g join ancestors a on g.id = a.parent_id
      )
      select 1 from members m where m.user_id = ${viewer.id} and (m.group_id in (select id from ancestors)${projectMember})
    ))`;
}
