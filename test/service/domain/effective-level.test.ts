// The effective level on the notifications page comes from the same SQL rule as the recipients
// (levels.ts's effectiveLevelSql over sources.ts's walk): the nearest level that is not global, else
// the user's global level — and a global level of `global` is participating.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, NotificationLevel, Project, User } from '../../../service/db/schema';
import { listNotificationTargets } from '../../../service/domain/notifications/targets';
import { addMember, createGroup, createProject, makeUser } from '../../support/api-fixtures';
import { createTestDatabase } from '../../support/db';

let db: Db;
beforeAll(async () => {
  db = (await createTestDatabase()).db;
});

async function setLevel(user: User, level: NotificationLevel, where: { group?: Group; project?: Project } = {}) {
  await db
    .insertInto('notification_settings')
    .values({ user_id: user.id, group_id: where.group?.id ?? null, project_id: where.project?.id ?? null, level })
    .execute();
}

describe('effective level on the notifications page', () => {
  it('takes the nearest level that is not global, and says where it comes from', async () => {
    const root = await createGroup(db, { path: 'root', visibility: 'private' });
    const platform = await createGroup(db, { path: 'platform', parent: 'root', visibility: 'private' });
    const project = await createProject(db, { path: 'root/platform/api', visibility: 'private' });
    const user = await makeUser(db, 'eve');
    await addMember(db, { username: 'eve', group: 'root', access: 'developer' });
    await setLevel(user, 'mention');
    await setLevel(user, 'watch', { group: root });
    await setLevel(user, 'disabled', { group: platform });
    await setLevel(user, 'global', { project });
    const { groups, projects } = await listNotificationTargets(db, user);
    expect(projects.total).toBe(1);
    expect(projects.rows).toEqual([
      {
        kind: 'project',
        id: project.id,
        name: 'api',
        fullPath: 'root/platform/api',
        level: 'global',
        effective: 'disabled',
        from: { kind: 'group', fullPath: 'root/platform' },
      },
    ]);
    expect(groups.rows.map((g) => [g.fullPath, g.level, g.effective, g.from])).toEqual([
      ['root', 'watch', 'watch', { kind: 'self' }],
      ['root/platform', 'disabled', 'disabled', { kind: 'self' }],
    ]);
  });

  it('falls back to the global level; a global level of global is participating (as recipients resolve it)', async () => {
    await createGroup(db, { path: 'fallback', visibility: 'public' });
    const project = await createProject(db, { path: 'fallback/p', visibility: 'public' });
    const watcher = await makeUser(db, 'frank');
    await setLevel(watcher, 'watch');
    await setLevel(watcher, 'global', { project });
    expect((await listNotificationTargets(db, watcher)).projects.rows.map((p) => [p.effective, p.from])).toEqual([
      ['watch', { kind: 'global' }],
    ]);
    const other = await makeUser(db, 'grace');
    await setLevel(other, 'global');
    await setLevel(other, 'global', { project });
    expect((await listNotificationTargets(db, other)).projects.rows.map((p) => [p.effective, p.from])).toEqual([
      ['participating', { kind: 'global' }],
    ]);
  });
});
