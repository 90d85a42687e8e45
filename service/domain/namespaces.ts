// Groups (nested), projects (in a group) and memberships with GitLab's access levels.
import { withTransaction } from '../db/transaction';
import { type DbOrTrx, GROUP_COLUMNS, type Group, PROJECT_COLUMNS, type Project, type Visibility } from '../db/schema';
import { recordAudit } from './audit';
import { conflict, invalid, notFound, uniqueViolation } from './errors';
import { getUserByUsername } from './users';

const PATH_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;
export const VISIBILITIES: Visibility[] = ['private', 'internal', 'public'];
export const ACCESS_LEVELS = { guest: 10, reporter: 20, developer: 30, maintainer: 40, owner: 50 } as const;
export type AccessLevelName = keyof typeof ACCESS_LEVELS;

function requireVisibility(v: string | undefined): Visibility {
  if (v === undefined) return 'private';
  if (!(VISIBILITIES as string[]).includes(v))
    throw invalid(`visibility "${v}" is invalid (choose from: ${VISIBILITIES.join(', ')})`);
  return v as Visibility;
}

// ---------------------------------------------------------------------------------------------
// Visibility by parent (issue 22; GitLab's Group#visibility_level_allowed_by_parent/_by_projects/
// _by_sub_groups and Project#visibility_level_allowed_by_group): a group or project is never more
// visible than the group it is in, so a public child cannot publish a private parent's name and
// path. Checked on create and on every change, here only; messages are GitLab's full messages.

const RANK: Record<Visibility, number> = { private: 0, internal: 10, public: 20 };
const moreVisible = (a: Visibility, b: Visibility) => RANK[a] > RANK[b];

const refused = (message: string) =>
  invalid(message, { visibility_level: [message.replace(/^Visibility level /, '')] });

/** A subgroup or project with `visibility` inside `parent`: refused when it would be more visible. */
function requireAllowedByParent(kind: 'group' | 'project', visibility: Visibility, parent: Group | undefined): void {
  if (!parent || !moreVisible(visibility, parent.visibility)) return;
  throw refused(
    kind === 'group'
      ? `Visibility level ${visibility} is not allowed since the parent group has a ${parent.visibility} visibility.`
      : `Visibility level ${visibility} is not allowed in a ${parent.visibility} group.`,
  );
}

/** Lowering a group: refused while a project or subgroup in it is more visible than the new level. */
async function requireAllowedByChildren(db: DbOrTrx, group: Group, visibility: Visibility): Promise<void> {
  const higher = VISIBILITIES.filter((v) => moreVisible(v, visibility));
  if (!higher.length) return;
  const project = await db
    .selectFrom('projects')
    .select('id')
    .where('group_id', '=', group.id)
    .where('visibility', 'in', higher)
    .executeTakeFirst();
  if (project)
    throw refused(
      `Visibility level ${visibility} is not allowed since this group contains projects with higher visibility.`,
    );
  const subgroup = await db
    .selectFrom('groups')
    .select('id')
    .where('parent_id', '=', group.id)
    .where('visibility', 'in', higher)
    .executeTakeFirst();
  if (subgroup)
    throw refused(`Visibility level ${visibility} is not allowed since there are sub-groups with higher visibility.`);
}

/**
 * The group row locked against a concurrent visibility change: `share` while a child is created
 * under it, `update` while its own visibility changes (so a child created at the same moment is
 * checked against the committed level, and a lowering sees every committed child).
 */
const lockGroup = (db: DbOrTrx, id: number, mode: 'share' | 'update') => {
  const q = db.selectFrom('groups').select(GROUP_COLUMNS).where('id', '=', id);
  return (mode === 'share' ? q.forShare() : q.forUpdate()).executeTakeFirst();
};

export interface SetVisibilityInput {
  visibility: string;
  actor?: string;
}

/** Change a group's visibility: never above its parent's, never below a project's or subgroup's in it. */
export async function setGroupVisibility(db: DbOrTrx, fullPath: string, input: SetVisibilityInput): Promise<Group> {
  return withTransaction(db, async (db) => {
    const visibility = requireVisibility(input.visibility);
    const found = await getGroupByFullPath(db, fullPath);
    const parent = found.parent_id === null ? undefined : await lockGroup(db, found.parent_id, 'share');
    const group = (await lockGroup(db, found.id, 'update'))!;
    requireAllowedByParent('group', visibility, parent);
    await requireAllowedByChildren(db, group, visibility);
    const updated = await db
      .updateTable('groups')
      .set({ visibility, updated_at: new Date() })
      .where('id', '=', group.id)
      .returning(GROUP_COLUMNS)
      .executeTakeFirstOrThrow();
    await recordAudit(db, {
      actor: input.actor ?? 'system',
      action: 'group.update',
      targetType: 'group',
      targetId: group.id,
      details: { full_path: group.full_path, visibility: { from: group.visibility, to: visibility } },
    });
    return updated;
  });
}

/** Change a project's visibility: never above its group's. */
export async function setProjectVisibility(
  db: DbOrTrx,
  pathWithNamespace: string,
  input: SetVisibilityInput,
): Promise<Project> {
  return withTransaction(db, async (db) => {
    const visibility = requireVisibility(input.visibility);
    const found = await getProjectByPath(db, pathWithNamespace);
    const group = await lockGroup(db, found.group_id, 'share');
    const project = (await db
      .selectFrom('projects')
      .select(PROJECT_COLUMNS)
      .where('id', '=', found.id)
      .forUpdate()
      .executeTakeFirst())!;
    requireAllowedByParent('project', visibility, group);
    const updated = await db
      .updateTable('projects')
      .set({ visibility, updated_at: new Date() })
      .where('id', '=', project.id)
      .returning(PROJECT_COLUMNS)
      .executeTakeFirstOrThrow();
    await recordAudit(db, {
      actor: input.actor ?? 'system',
      action: 'project.update',
      targetType: 'project',
      targetId: project.id,
      details: {
        path_with_namespace: project.path_with_namespace,
        visibility: { from: project.visibility, to: visibility },
      },
    });
    return updated;
  });
}

function requirePath(path: string, what: string): string {
  if (!PATH_RE.test(path) || path.endsWith('.git') || path.endsWith('.atom')) {
    throw invalid(
      `${what} path "${path}" is invalid: use letters, digits, '_', '-' and '.', starting with a letter, digit or '_'`,
    );
  }
  return path;
}

export const findGroupByFullPath = (db: DbOrTrx, fullPath: string): Promise<Group | undefined> =>
  db
    .selectFrom('groups')
    .select(GROUP_COLUMNS)
    .where((eb) => eb(eb.fn('lower', ['full_path']), '=', fullPath.toLowerCase()))
    .executeTakeFirst();

export async function getGroupByFullPath(db: DbOrTrx, fullPath: string): Promise<Group> {
  const group = await findGroupByFullPath(db, fullPath);
  if (!group) throw notFound(`group "${fullPath}" not found`);
  return group;
}

export const findProjectByPath = (db: DbOrTrx, pathWithNamespace: string): Promise<Project | undefined> =>
  db
    .selectFrom('projects')
    .select(PROJECT_COLUMNS)
    .where((eb) => eb(eb.fn('lower', ['path_with_namespace']), '=', pathWithNamespace.toLowerCase()))
    .executeTakeFirst();

export async function getProjectByPath(db: DbOrTrx, pathWithNamespace: string): Promise<Project> {
  const project = await findProjectByPath(db, pathWithNamespace);
  if (!project) throw notFound(`project "${pathWithNamespace}" not found`);
  return project;
}

export interface CreateGroupInput {
  path: string;
  name?: string;
  parent?: string;
  visibility?: string;
  actor?: string;
}

export async function createGroup(db: DbOrTrx, input: CreateGroupInput): Promise<Group> {
  return withTransaction(db, async (db) => {
    const path = requirePath(input.path?.trim() ?? '', 'group');
    const visibility = requireVisibility(input.visibility);
    const found = input.parent ? await findGroupByFullPath(db, input.parent) : undefined;
    if (input.parent && !found) throw invalid(`parent group "${input.parent}" not found`);
    const parent = found && (await lockGroup(db, found.id, 'share'));
    requireAllowedByParent('group', visibility, parent);
    const fullPath = parent ? `${parent.full_path}/${path}` : path;
    if (await findProjectByPath(db, fullPath)) throw conflict(`"${fullPath}" is already taken by a project`);
    try {
      const group = await db
        .insertInto('groups')
        .values({
          parent_id: parent?.id ?? null,
          path,
          name: input.name?.trim() || path,
          full_path: fullPath,
          visibility,
        })
        .returning(GROUP_COLUMNS)
        .executeTakeFirstOrThrow();
      await recordAudit(db, {
        actor: input.actor ?? 'system',
        action: 'group.create',
        targetType: 'group',
        targetId: group.id,
        details: { full_path: fullPath, visibility },
      });
      return group;
    } catch (err) {
      throw uniqueViolation(err, { groups_full_path_lower: `group "${fullPath}" already exists` }) ?? err;
    }
  });
}

export interface CreateProjectInput {
  /** NAMESPACE/PATH: the namespace is a group's full path. */
  path: string;
  name?: string;
  visibility?: string;
  actor?: string;
}

export async function createProject(db: DbOrTrx, input: CreateProjectInput): Promise<Project> {
  return withTransaction(db, async (db) => {
    const full = input.path?.trim() ?? '';
    const slash = full.lastIndexOf('/');
    if (slash <= 0)
      throw invalid(`project path "${full}" must be NAMESPACE/PATH (the namespace is a group's full path)`);
    const namespace = full.slice(0, slash);
    const path = requirePath(full.slice(slash + 1), 'project');
    const visibility = requireVisibility(input.visibility);
    const found = await findGroupByFullPath(db, namespace);
    if (!found) throw invalid(`group "${namespace}" not found`);
    const group = (await lockGroup(db, found.id, 'share'))!;
    requireAllowedByParent('project', visibility, group);
    const pathWithNamespace = `${group.full_path}/${path}`;
    if (await findGroupByFullPath(db, pathWithNamespace))
      throw conflict(`"${pathWithNamespace}" is already taken by a group`);
    try {
      const project = await db
        .insertInto('projects')
        .values({
          group_id: group.id,
          path,
          name: input.name?.trim() || path,
          path_with_namespace: pathWithNamespace,
          visibility,
        })
        .returning(PROJECT_COLUMNS)
        .executeTakeFirstOrThrow();
      await recordAudit(db, {
        actor: input.actor ?? 'system',
        action: 'project.create',
        targetType: 'project',
        targetId: project.id,
        details: { path_with_namespace: pathWithNamespace, visibility },
      });
      return project;
    } catch (err) {
      throw (
        uniqueViolation(err, { projects_path_with_namespace_lower: `project "${pathWithNamespace}" already exists` }) ??
        err
      );
    }
  });
}

export interface AddMemberInput {
  group?: string;
  project?: string;
  username: string;
  access: string;
  actor?: string;
}

/** Add a member, or change the access level of an existing one. */
export async function addMember(db: DbOrTrx, input: AddMemberInput) {
  return withTransaction(db, async (db) => {
    if (!!input.group === !!input.project) throw invalid('give exactly one of group or project');
    const level = ACCESS_LEVELS[input.access as AccessLevelName];
    if (!level)
      throw invalid(
        `access level "${input.access}" is invalid (choose from: ${Object.keys(ACCESS_LEVELS).join(', ')})`,
      );
    const user = await getUserByUsername(db, input.username);
    const source = input.group ? await getGroupByFullPath(db, input.group) : await getProjectByPath(db, input.project!);
    const column = input.group ? 'group_id' : 'project_id';
    const existing = await db
      .selectFrom('members')
      .select('id')
      .where('user_id', '=', user.id)
      .where(column, '=', source.id)
      .executeTakeFirst();
    if (existing) {
      await db.updateTable('members').set({ access_level: level }).where('id', '=', existing.id).execute();
    } else {
      await db
        .insertInto('members')
        .values({ user_id: user.id, [column]: source.id, access_level: level })
        .execute();
    }
    const sourceName = input.group
      ? `group:${(source as Group).full_path}`
      : `project:${(source as Project).path_with_namespace}`;
    await recordAudit(db, {
      actor: input.actor ?? 'system',
      action: 'member.add',
      targetType: input.group ? 'group' : 'project',
      targetId: source.id,
      details: { user: user.username, access_level: level },
    });
    return { source: sourceName, user: user.username, access_level: level };
  });
}

export const groupSummary = (g: Group) => ({
  id: g.id,
  full_path: g.full_path,
  name: g.name,
  visibility: g.visibility,
  parent_id: g.parent_id,
});
export const projectSummary = (p: Project) => ({
  id: p.id,
  path_with_namespace: p.path_with_namespace,
  name: p.name,
  visibility: p.visibility,
});

// ---- listing and removal (the admin CLI's list/delete/remove verbs)

export const listGroups = (db: DbOrTrx): Promise<Group[]> =>
  db.selectFrom('groups').select(GROUP_COLUMNS).orderBy('full_path').execute();

/** Projects, in one group (and its subgroups) when `groupFullPath` is given. */
export async function listProjects(db: DbOrTrx, groupFullPath?: string): Promise<Project[]> {
  let q = db.selectFrom('projects').select(PROJECT_COLUMNS).orderBy('path_with_namespace');
  if (groupFullPath !== undefined) {
    const group = await getGroupByFullPath(db, groupFullPath);
    q = q.where((eb) =>
      eb.or([eb('group_id', '=', group.id), eb('path_with_namespace', 'like', `${escapeLike(group.full_path)}/%`)]),
    );
  }
  return q.execute();
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Deleting a group deletes its subgroups, their projects and every membership in them (cascade). */
export async function deleteGroup(db: DbOrTrx, fullPath: string, actor = 'system'): Promise<Group> {
  return withTransaction(db, async (db) => {
    const group = await getGroupByFullPath(db, fullPath);
    await db.deleteFrom('groups').where('id', '=', group.id).execute();
    await recordAudit(db, {
      actor,
      action: 'group.delete',
      targetType: 'group',
      targetId: group.id,
      details: { full_path: group.full_path },
    });
    return group;
  });
}

export async function deleteProject(db: DbOrTrx, pathWithNamespace: string, actor = 'system'): Promise<Project> {
  return withTransaction(db, async (db) => {
    const project = await getProjectByPath(db, pathWithNamespace);
    await db.deleteFrom('projects').where('id', '=', project.id).execute();
    await recordAudit(db, {
      actor,
      action: 'project.delete',
      targetType: 'project',
      targetId: project.id,
      details: { path_with_namespace: project.path_with_namespace },
    });
    return project;
  });
}

export type MemberView = { source: string; user: string; access_level: number };

/** The direct members of one group or project, by username. */
export async function listMembers(db: DbOrTrx, target: { group?: string; project?: string }): Promise<MemberView[]> {
  const { column, id, source } = await memberSource(db, target);
  const rows = await db
    .selectFrom('members')
    .innerJoin('users', 'users.id', 'members.user_id')
    .select(['users.username', 'members.access_level'])
    .where(`members.${column}`, '=', id)
    .orderBy('users.username')
    .execute();
  return rows.map((r) => ({ source, user: r.username, access_level: r.access_level }));
}

/** Remove one direct membership; a user who is not a member is an error (nothing to remove). */
export async function removeMember(
  db: DbOrTrx,
  input: { group?: string; project?: string; username: string; actor?: string },
): Promise<MemberView> {
  return withTransaction(db, async (db) => {
    const { column, id, source } = await memberSource(db, input);
    const user = await getUserByUsername(db, input.username);
    const removed = await db
      .deleteFrom('members')
      .where('user_id', '=', user.id)
      .where(column, '=', id)
      .returning('access_level')
      .executeTakeFirst();
    if (!removed) throw notFound(`${user.username} is not a member of ${source}`);
    await recordAudit(db, {
      actor: input.actor ?? 'system',
      action: 'member.remove',
      targetType: column === 'group_id' ? 'group' : 'project',
      targetId: id,
      details: { user: user.username, access_level: removed.access_level },
    });
    return { source, user: user.username, access_level: removed.access_level };
  });
}

async function memberSource(db: DbOrTrx, target: { group?: string; project?: string }) {
  if (!!target.group === !!target.project) throw invalid('give exactly one of group or project');
  if (target.group) {
    const group = await getGroupByFullPath(db, target.group);
    return { column: 'group_id' as const, id: group.id, source: `group:${group.full_path}` };
  }
  const project = await getProjectByPath(db, target.project!);
  return { column: 'project_id' as const, id: project.id, source: `project:${project.path_with_namespace}` };
}
