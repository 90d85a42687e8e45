// Who may see a group or a project (contract §4): public and internal ones are visible to every
// signed-in user; a private one only to members of it or of any ancestor group (for a project:
// members of the project, of its group or of the group's ancestors). Admins see everything, as
// in GitLab without Admin Mode. Callers answer "not visible" exactly like "missing", so the
// existence of a private group or project never leaks.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx, Group, Project, User } from '../db/schema';
import { GROUP_COLUMNS, PROJECT_COLUMNS } from './namespaces';

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

/** Whether the viewer may see this group (the rule of visibleNamespaceIds, in one query). */
export const canSeeGroup = (db: DbOrTrx, viewer: Viewer, group: Pick<Group, 'id'>): Promise<boolean> =>
  isVisible(db, viewer, 'group', group.id);

/** Whether the viewer may see this project (the rule of visibleNamespaceIds, in one query). */
export const canSeeProject = (db: DbOrTrx, viewer: Viewer, project: Pick<Project, 'id'>): Promise<boolean> =>
  isVisible(db, viewer, 'project', project.id);

async function isVisible(db: DbOrTrx, viewer: Viewer, kind: 'group' | 'project', id: number): Promise<boolean> {
  const visible = visibleNamespaceIds(viewer, kind, String(id));
  if (!visible) return false;
  const { rows } = await sql<{ visible: boolean }>`select exists (${visible}) as visible`.execute(db);
  return rows[0]?.visible === true;
}

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
 * `select id` of the group or project with this id or full path when the viewer may see it: the one
 * statement of the rule that canSee*, findVisible* and the notification-settings reads and upserts
 * all use (a write touches only a visible target without a round trip to find it first). The lists
 * (listing.ts) and the recipients (notification-recipients.ts) apply the rule to many rows at once
 * in their own SQL; test/api/visibility.test.ts pins that they agree with this one. Undefined: no
 * such path can exist.
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
