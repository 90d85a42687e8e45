// Attack (issue 22): "a public child of a private group is allowed and publishes the parent's name
// and path". A group or project is never more visible than its group: refused on create and on
// change, through the CLI and the domain, with GitLab's messages; lowering a group below a child is
// refused too; a concurrent lowering and creation cannot slip past each other; and migration 0012
// lowers the violating rows an older installation holds, after which the API answers 404.
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { createMigrator, migrateToLatest } from '../../service/db/migrator';
import { createGroup, createProject, setGroupVisibility } from '../../service/domain/namespaces';
import { expectUserError, runIn } from '../admin-cli/support';
import { buildTestApp } from '../support/app';
import { makePat, makeUser } from '../support/api-fixtures';
import { createTestDatabase, resetDatabase, type TestDatabase } from '../support/db';

let t: TestDatabase;
beforeEach(async () => {
  t ??= await createTestDatabase();
  await resetDatabase(t.db);
});

const ok = async (argv: string[]) => {
  const run = await runIn(t.db, [...argv, '--json']);
  expect(run.code, run.err).toBe(0);
  return run.json;
};

/** Every (child, parent) pair where the child is more visible: must always be empty. */
async function violations(db = t.db): Promise<string[]> {
  const { rows } = await sql<{ v: string }>`
    with r(v, n) as (values ('private', 0), ('internal', 10), ('public', 20))
    select c.full_path || ' ' || c.visibility || ' > ' || p.visibility as v
    from groups c join groups p on p.id = c.parent_id
    join r rc on rc.v = c.visibility join r rp on rp.v = p.visibility where rc.n > rp.n
    union all
    select c.path_with_namespace || ' ' || c.visibility || ' > ' || p.visibility
    from projects c join groups p on p.id = c.group_id
    join r rc on rc.v = c.visibility join r rp on rp.v = p.visibility where rc.n > rp.n`.execute(db);
  return rows.map((r) => r.v);
}

describe('a child more visible than its parent', () => {
  it('create: a subgroup or project above its group is refused with GitLab’s message; equal or lower is fine', async () => {
    await ok(['groups', 'create', '--path', 'privg', '--visibility', 'private']);
    await ok(['groups', 'create', '--path', 'intg', '--visibility', 'internal']);
    await expectUserError(
      t.db,
      ['groups', 'create', '--path', 'pubsub', '--parent', 'privg', '--visibility', 'public'],
      /^lanyard-admin: Visibility level public is not allowed since the parent group has a private visibility\.$/,
    );
    await expectUserError(
      t.db,
      ['groups', 'create', '--path', 'sub', '--parent', 'intg', '--visibility', 'public'],
      /^lanyard-admin: Visibility level public is not allowed since the parent group has a internal visibility\.$/,
    );
    await expectUserError(
      t.db,
      ['projects', 'create', '--path', 'privg/app', '--visibility', 'internal'],
      /^lanyard-admin: Visibility level internal is not allowed in a private group\.$/,
    );
    // The domain refuses the same way (every path goes through it), with the field it is about.
    await expect(createProject(t.db, { path: 'intg/app', visibility: 'public' })).rejects.toMatchObject({
      kind: 'invalid',
      message: 'Visibility level public is not allowed in a internal group.',
      details: { visibility_level: ['public is not allowed in a internal group.'] },
    });
    expect(
      await ok(['groups', 'create', '--path', 'sub', '--parent', 'intg', '--visibility', 'internal']),
    ).toMatchObject({ full_path: 'intg/sub', visibility: 'internal' });
    expect(await ok(['projects', 'create', '--path', 'intg/sub/app'])).toMatchObject({ visibility: 'private' });
    expect(await violations()).toEqual([]);
  });

  it('change: raising a child above its group, or lowering a group below a child, is refused and changes nothing', async () => {
    await ok(['groups', 'create', '--path', 'pub', '--visibility', 'public']);
    await ok(['groups', 'create', '--path', 'team', '--parent', 'pub', '--visibility', 'internal']);
    await ok(['projects', 'create', '--path', 'pub/site', '--visibility', 'public']);
    await ok(['projects', 'create', '--path', 'pub/team/api', '--visibility', 'internal']);
    await expectUserError(
      t.db,
      ['groups', 'set-visibility', 'pub', 'private'],
      /^lanyard-admin: Visibility level private is not allowed since this group contains projects with higher visibility\.$/,
    );
    await expectUserError(
      t.db,
      ['groups', 'set-visibility', 'pub/team', 'private'],
      /^lanyard-admin: Visibility level private is not allowed since this group contains projects with higher visibility\.$/,
    );
    await expectUserError(
      t.db,
      ['groups', 'set-visibility', 'pub/team', 'visible'],
      /^lanyard-admin: visibility "visible" is invalid \(choose from: private, internal, public\)$/,
    );
    // Once the project is lowered, the subgroup still holds the group up.
    await ok(['projects', 'set-visibility', 'pub/site', 'private']);
    await expectUserError(
      t.db,
      ['groups', 'set-visibility', 'pub', 'private'],
      /^lanyard-admin: Visibility level private is not allowed since there are sub-groups with higher visibility\.$/,
    );
    // Lowering bottom-up works; raising a child back above its lowered parent does not.
    await ok(['projects', 'set-visibility', 'pub/team/api', 'private']);
    expect(await ok(['groups', 'set-visibility', 'pub/team', 'private'])).toMatchObject({ visibility: 'private' });
    expect(await ok(['groups', 'set-visibility', 'pub', 'private'])).toMatchObject({ visibility: 'private' });
    await expectUserError(
      t.db,
      ['projects', 'set-visibility', 'pub/team/api', 'internal'],
      /^lanyard-admin: Visibility level internal is not allowed in a private group\.$/,
    );
    await expectUserError(
      t.db,
      ['groups', 'set-visibility', 'pub/team', 'public'],
      /^lanyard-admin: Visibility level public is not allowed since the parent group has a private visibility\.$/,
    );
    expect(await violations()).toEqual([]);
    const audit = await t.db
      .selectFrom('audit_events')
      .select(['action', 'details'])
      .where('action', '=', 'group.update')
      .execute();
    expect(audit.map((a) => a.details)).toEqual([
      { full_path: 'pub/team', visibility: { from: 'internal', to: 'private' } },
      { full_path: 'pub', visibility: { from: 'public', to: 'private' } },
    ]);
  });

  it('lowering a group while a public child is created under it: 20 races, never a child above its parent', async () => {
    for (let round = 0; round < 20; round++) {
      const g = await createGroup(t.db, { path: `g${round}`, visibility: 'public' });
      const results = await Promise.allSettled([
        setGroupVisibility(t.db, g.full_path, { visibility: 'private' }),
        createProject(t.db, { path: `${g.full_path}/p`, visibility: 'public' }),
        createGroup(t.db, { path: 's', parent: g.full_path, visibility: 'public' }),
      ]);
      // Either the children came first (and the lowering was refused) or the lowering did.
      const [lowered, project, subgroup] = results.map((r) => r.status);
      if (lowered === 'fulfilled') expect([project, subgroup]).toEqual(['rejected', 'rejected']);
      else expect([project, subgroup]).toContain('fulfilled');
      expect(await violations()).toEqual([]);
    }
  });
});

describe('migration 0012: existing violations are lowered to their parent', () => {
  it('a public subgroup and project of a private group become private; the API then answers 404', async () => {
    const old = await createTestDatabase();
    expect((await createMigrator(old.db).migrateTo('0008-retention-indexes')).error).toBeUndefined();
    await sql`
      insert into groups (path, name, full_path, visibility) values ('privg', 'Secret Group', 'privg', 'private');
      insert into groups (parent_id, path, name, full_path, visibility)
        select id, 'pubsub', 'Public Sub', 'privg/pubsub', 'public' from groups where full_path = 'privg';
      insert into groups (parent_id, path, name, full_path, visibility)
        select id, 'deep', 'Deep', 'privg/pubsub/deep', 'internal' from groups where full_path = 'privg/pubsub';
      insert into projects (group_id, path, name, path_with_namespace, visibility)
        select id, 'www', 'www', 'privg/pubsub/www', 'public' from groups where full_path = 'privg/pubsub';
      insert into groups (path, name, full_path, visibility) values ('open', 'Open', 'open', 'public');
      insert into projects (group_id, path, name, path_with_namespace, visibility)
        select id, 'site', 'site', 'open/site', 'internal' from groups where full_path = 'open';
    `.execute(old.db);
    // Only the subgroup breaks the rule directly; its children follow it down.
    expect(await violations(old.db)).toEqual(['privg/pubsub public > private']);
    await migrateToLatest(old.db);
    expect(await violations(old.db)).toEqual([]);
    const groups = await old.db.selectFrom('groups').select(['full_path', 'visibility']).orderBy('id').execute();
    expect(groups).toEqual([
      { full_path: 'privg', visibility: 'private' },
      { full_path: 'privg/pubsub', visibility: 'private' },
      { full_path: 'privg/pubsub/deep', visibility: 'private' },
      { full_path: 'open', visibility: 'public' },
    ]);
    const projects = await old.db
      .selectFrom('projects')
      .select(['path_with_namespace', 'visibility'])
      .orderBy('id')
      .execute();
    expect(projects).toEqual([
      { path_with_namespace: 'privg/pubsub/www', visibility: 'private' },
      { path_with_namespace: 'open/site', visibility: 'internal' },
    ]);
    const audit = await old.db
      .selectFrom('audit_events')
      .select(['actor', 'action', 'details'])
      .orderBy('id')
      .execute();
    expect(audit).toEqual([
      {
        actor: 'migration:0012',
        action: 'group.update',
        details: { visibility: 'private', reason: 'more visible than its parent group' },
      },
      {
        actor: 'migration:0012',
        action: 'group.update',
        details: { visibility: 'private', reason: 'more visible than its parent group' },
      },
      {
        actor: 'migration:0012',
        action: 'project.update',
        details: { visibility: 'private', reason: 'more visible than its parent group' },
      },
    ]);
    // The leak of the finding: an outsider asks for the once-public subgroup by path.
    const outsider = await makeUser(old.db, 'outsider');
    const token = await makePat(old.db, outsider, ['read_api']);
    const app = await buildTestApp(old.db);
    for (const url of ['/api/v4/groups/privg%2Fpubsub', '/api/v4/projects/privg%2Fpubsub%2Fwww']) {
      const res = await app.inject({ method: 'GET', url, headers: { 'private-token': token } });
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toEqual({
        message: url.includes('projects') ? '404 Project Not Found' : '404 Group Not Found',
      });
      expect(res.body).not.toContain('Secret Group');
    }
  });
});
