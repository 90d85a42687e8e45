// What a user may list (contract §4): the groups and projects visible to them (public, internal,
// or private with membership of it or of an ancestor group; admins see all), with GitLab's
// filters (`search`, `owned`, `membership`, `min_access_level`) and orderings, one page at a time.
// Also the display names GitLab derives from the tree: a group's `full_name` ("Parent / Child").
import { sql, type RawBuilder } from 'kysely';
import type { DbOrTrx, Group, Project } from '../db/schema';
import { type Page, windowPage } from './page';
import { type Viewer, viewerSql, visibleSql } from './visibility';

export const GROUP_ORDERS = ['name', 'path', 'id', 'similarity'] as const;
export const PROJECT_ORDERS = [
  'id',
  'name',
  'path',
  'created_at',
  'updated_at',
  'last_activity_at',
  'similarity',
] as const;
export type GroupOrder = (typeof GROUP_ORDERS)[number];
export type ProjectOrder = (typeof PROJECT_ORDERS)[number];

export interface ListFilter {
  search?: string;
  /** Only where the viewer is an Owner (directly or through an ancestor group). */
  owned?: boolean;
  /** Only where the viewer is a member (directly or through an ancestor group). */
  membership?: boolean;
  /** Only where the viewer's access level is at least this (implies membership). */
  minAccessLevel?: number;
  sort: 'asc' | 'desc';
  limit: number;
  offset: number;
}

export type GroupRow = Group & { full_name: string };
export type ProjectRow = Project & {
  group_full_path: string;
  group_full_name: string;
  group_name: string;
  group_path: string;
  group_parent_id: number | null;
};

/**
 * The viewer's access level on every group, inherited down the tree (the highest of its own and
 * its ancestors' memberships), as a CTE `access(group_id, level)`.
 */
const groupAccessCte = (userId: number) => sql`
  access_tree as (
    select g.id as group_id, m.access_level as level
    from members m join groups g on g.id = m.group_id
    where m.user_id = ${userId}
    union all
    select c.id, a.level from groups c join access_tree a on c.parent_id = a.group_id
  ),
  access as (select group_id, max(level) as level from access_tree group by group_id)`;

/** `%term%` for ILIKE, with the term's own wildcards escaped. */
const likePattern = (term: string) => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Every group's full_name, computed down the tree (GitLab joins the names with " / "). */
const fullNamesCte = sql`
  names as (
    select id, name::text as full_name from groups where parent_id is null
    union all
    select c.id, n.full_name || ' / ' || c.name from groups c join names n on c.parent_id = n.id
  )`;

function accessCondition(filter: ListFilter, level: RawBuilder<unknown>): RawBuilder<unknown> {
  const min = filter.owned ? 50 : (filter.minAccessLevel ?? (filter.membership ? 10 : undefined));
  return min === undefined ? sql`true` : sql`coalesce(${level}, 0) >= ${min}`;
}

export async function listVisibleGroups(
  db: DbOrTrx,
  viewer: Viewer,
  filter: ListFilter & { orderBy: GroupOrder },
): Promise<Page<GroupRow>> {
  const visible = visibleSql(viewerSql(viewer), { visibility: sql`g.visibility`, groupId: sql`g.id` });
  const search = filter.search
    ? sql`(g.name ilike ${likePattern(filter.search)} or g.path ilike ${likePattern(filter.search)})`
    : sql`true`;
  const dir = filter.sort === 'desc' ? sql`desc` : sql`asc`;
  // GitLab sorts by name by default; `similarity` without a search falls back to it, as GitLab does.
  const order =
    filter.orderBy === 'id'
      ? sql`g.id ${dir}`
      : filter.orderBy === 'path'
        ? sql`g.path ${dir}, g.id ${dir}`
        : sql`g.name ${dir}, g.id ${dir}`;
  const { rows } = await sql<GroupRow & { total: string }>`
    with recursive ${groupAccessCte(viewer.id)}, ${fullNamesCte}
    select g.id, g.parent_id, g.path, g.name, g.full_path, g.visibility, g.created_at, g.updated_at,
      n.full_name, count(*) over () as total
    from groups g
    join names n on n.id = g.id
    left join access a on a.group_id = g.id
    where ${visible} and ${search} and ${accessCondition(filter, sql`a.level`)}
    order by ${order}
    limit ${filter.limit} offset ${filter.offset}
  `.execute(db);
  return windowPage(rows, () => countGroups(db, viewer, filter, visible, search));
}

async function countGroups(
  db: DbOrTrx,
  viewer: Viewer,
  filter: ListFilter,
  visible: RawBuilder<unknown>,
  search: RawBuilder<unknown>,
): Promise<number> {
  const { rows } = await sql<{ total: string }>`
    with recursive ${groupAccessCte(viewer.id)}
    select count(*) as total from groups g left join access a on a.group_id = g.id
    where ${visible} and ${search} and ${accessCondition(filter, sql`a.level`)}
  `.execute(db);
  return Number(rows[0]?.total ?? 0);
}

export async function listVisibleProjects(
  db: DbOrTrx,
  viewer: Viewer,
  filter: ListFilter & { orderBy: ProjectOrder; groupId?: number },
): Promise<Page<ProjectRow>> {
  // A project's access: its own membership, or the one inherited through its group.
  const level = sql`greatest(pm.access_level, a.level)`;
  const visible = visibleSql(viewerSql(viewer), {
    visibility: sql`p.visibility`,
    groupId: sql`p.group_id`,
    projectId: sql`p.id`,
  });
  const search = filter.search
    ? sql`(p.name ilike ${likePattern(filter.search)} or p.path ilike ${likePattern(filter.search)})`
    : sql`true`;
  const inGroup = filter.groupId === undefined ? sql`true` : sql`p.group_id = ${filter.groupId}`;
  const dir = filter.sort === 'desc' ? sql`desc` : sql`asc`;
  const column = {
    id: sql`p.id`,
    name: sql`p.name`,
    path: sql`p.path`,
    created_at: sql`p.created_at`,
    updated_at: sql`p.updated_at`,
    // Lanyard records no repository activity: the last change of the project stands in for it.
    last_activity_at: sql`p.updated_at`,
    similarity: sql`p.created_at`,
  }[filter.orderBy];
  const from = sql`
    projects p
    join groups g on g.id = p.group_id
    left join members pm on pm.project_id = p.id and pm.user_id = ${viewer.id}
    left join access a on a.group_id = p.group_id`;
  const where = sql`${visible} and ${search} and ${inGroup} and ${accessCondition(filter, level)}`;
  const { rows } = await sql<ProjectRow & { total: string }>`
    with recursive ${groupAccessCte(viewer.id)}, ${fullNamesCte}
    select p.id, p.group_id, p.path, p.name, p.path_with_namespace, p.visibility, p.created_at, p.updated_at,
      g.full_path as group_full_path, n.full_name as group_full_name, g.name as group_name,
      g.path as group_path, g.parent_id as group_parent_id, count(*) over () as total
    from ${from}
    join names n on n.id = g.id
    where ${where}
    order by ${column} ${dir}, p.id ${dir}
    limit ${filter.limit} offset ${filter.offset}
  `.execute(db);
  return windowPage(rows, async () => {
    const counted = await sql<{ total: string }>`
      with recursive ${groupAccessCte(viewer.id)}
      select count(*) as total from ${from} where ${where}
    `.execute(db);
    return counted.rows[0]?.total ?? 0;
  });
}

/** A group's full_name ("Parent / Child"), from the names of its ancestors. */
export async function groupFullName(db: DbOrTrx, groupId: number): Promise<string> {
  const { rows } = await sql<{ full_name: string }>`
    with recursive ${fullNamesCte}
    select full_name from names where id = ${groupId}
  `.execute(db);
  return rows[0]?.full_name ?? '';
}

/** A project with its namespace's names (for GitLab's `namespace` and `name_with_namespace`). */
export async function projectWithNamespace(db: DbOrTrx, project: Project): Promise<ProjectRow> {
  const group = await db
    .selectFrom('groups')
    .select(['full_path', 'name', 'path', 'parent_id'])
    .where('id', '=', project.group_id)
    .executeTakeFirstOrThrow();
  return {
    ...project,
    group_full_path: group.full_path,
    group_full_name: await groupFullName(db, project.group_id),
    group_name: group.name,
    group_path: group.path,
    group_parent_id: group.parent_id,
  };
}
