// Builds a group tree with users, memberships and notification settings in PostgreSQL from a plain
// description, and returns the same world (with the database's ids) for the reference model.
import type { Db } from '../../service/db/schema';
import type { Level, World } from './recipients-reference';

export interface WorldSpec {
  /** Parent index (into this list) of each group; null for a root. */
  groups: { parent: number | null; visibility: string }[];
  projects: { group: number; visibility: string }[];
  users: { blocked?: boolean; admin?: boolean }[];
  /** user index → group or project index */
  members: { user: number; group?: number; project?: number }[];
  settings: {
    user: number;
    group?: number;
    project?: number;
    level: Level;
    email?: string | null;
    flags?: Record<string, boolean>;
  }[];
}

let seq = 0;

export async function insertWorld(db: Db, spec: WorldSpec): Promise<World> {
  const run = ++seq;
  const world: World = { groups: [], projects: [], users: [], members: [], settings: [] };
  for (const [i, g] of spec.groups.entries()) {
    const parent = g.parent === null ? undefined : world.groups[g.parent];
    const path = `g${i}`;
    const fullPath = parent ? `${parent.fullPath}/${path}` : `w${run}-${path}`;
    const row = await db
      .insertInto('groups')
      .values({
        parent_id: parent?.id ?? null,
        path,
        name: path,
        full_path: fullPath,
        visibility: g.visibility as 'private',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    world.groups.push({ id: Number(row.id), parentId: parent?.id ?? null, fullPath, visibility: g.visibility });
  }
  for (const [i, p] of spec.projects.entries()) {
    const group = world.groups[p.group];
    const path = `${group.fullPath}/p${i}`;
    const row = await db
      .insertInto('projects')
      .values({
        group_id: group.id,
        path: `p${i}`,
        name: `p${i}`,
        path_with_namespace: path,
        visibility: p.visibility as 'private',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    world.projects.push({ id: Number(row.id), groupId: group.id, path, visibility: p.visibility });
  }
  for (const [i, u] of spec.users.entries()) {
    const username = `w${run}u${i}`;
    const email = `${username}@example.com`;
    const row = await db
      .insertInto('users')
      .values({
        username,
        email,
        name: username,
        password_hash: null,
        is_admin: !!u.admin,
        state: u.blocked ? 'blocked' : 'active',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    world.users.push({ id: Number(row.id), username, email, blocked: !!u.blocked, admin: !!u.admin });
  }
  for (const m of spec.members) {
    const userId = world.users[m.user].id;
    const groupId = m.group === undefined ? undefined : world.groups[m.group].id;
    const projectId = m.project === undefined ? undefined : world.projects[m.project].id;
    if (world.members.some((x) => x.userId === userId && x.groupId === groupId && x.projectId === projectId)) continue;
    await db
      .insertInto('members')
      .values({ user_id: userId, group_id: groupId ?? null, project_id: projectId ?? null, access_level: 30 })
      .execute();
    world.members.push({ userId, groupId, projectId });
  }
  for (const s of spec.settings) {
    const userId = world.users[s.user].id;
    const where =
      s.group !== undefined
        ? ({ type: 'group', id: world.groups[s.group].id } as const)
        : s.project !== undefined
          ? ({ type: 'project', id: world.projects[s.project].id } as const)
          : ({ type: 'global' } as const);
    const exists = world.settings.some(
      (x) =>
        x.userId === userId &&
        x.where.type === where.type &&
        (x.where as { id?: number }).id === (where as { id?: number }).id,
    );
    if (exists) continue;
    const email = where.type === 'project' ? null : (s.email ?? null);
    await db
      .insertInto('notification_settings')
      .values({
        user_id: userId,
        group_id: where.type === 'group' ? where.id : null,
        project_id: where.type === 'project' ? where.id : null,
        level: s.level,
        notification_email: email,
        ...(s.flags ?? {}),
      })
      .execute();
    world.settings.push({ userId, where, level: s.level, email, flags: s.flags ?? {} });
  }
  return world;
}
