// The notification subscriptions list (migration 0030, service/domain/notifications/subscriptions.ts):
// the database keeps it true through every kind of write — settings and memberships added, changed
// and removed, groups and projects created, moved and deleted, many rows in one statement — and
// under concurrent writes to the same user's settings. After every step the list must equal the
// rows computed from scratch by the same rule; the resolution itself is held to the reference model
// of the rules by notification-recipients-property.test.ts.
import fc from 'fast-check';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../service/db/schema';
import { NOTIFICATION_EVENTS } from '../../../service/db/schema';
import { assertSubscriptionRulesCurrent } from '../../../service/domain/notifications/subscriptions';
import { createTestDatabase, resetDatabase } from '../../support/db';

let db: Db;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
});

type Row = Record<string, unknown>;
const key = (r: Row) => JSON.stringify(r);
const sorted = (rows: Row[]) => rows.map(key).sort();

/** The list as kept, and as computed from scratch for every group and project. */
async function keptAndComputed(): Promise<{ kept: string[]; computed: string[] }> {
  const kept = await sql<Row>`
    select user_id, coalesce(group_id, project_id) as target_id, case when group_id is null then 'project' else 'group' end as target_type,
           level, source_type, source_id, flags, group_email, global_email, member
      from notification_subscriptions`.execute(db);
  const computed = await sql<Row>`
    select user_id, target_id, target_type, level, source_type, source_id, flags, group_email, global_email, member
      from notification_subscription_rows(array(select id from groups), array(select id from projects))`.execute(db);
  return { kept: sorted(kept.rows), computed: sorted(computed.rows) };
}

const LEVELS = ['disabled', 'participating', 'watch', 'global', 'mention', 'custom'] as const;

/** One write, on indexes into what exists (taken modulo the current counts). */
const opArb = fc.oneof(
  fc.record({
    op: fc.constant('setting' as const),
    user: fc.nat(),
    where: fc.constantFrom('global', 'group', 'project'),
    at: fc.nat(),
    level: fc.constantFrom(...LEVELS),
    flags: fc.subarray([...NOTIFICATION_EVENTS], { maxLength: 3 }),
    email: fc.boolean(),
  }),
  fc.record({
    op: fc.constant('unset' as const),
    user: fc.nat(),
    where: fc.constantFrom('global', 'group', 'project'),
    at: fc.nat(),
  }),
  fc.record({ op: fc.constant('join' as const), user: fc.nat(), onProject: fc.boolean(), at: fc.nat() }),
  fc.record({ op: fc.constant('leave' as const), user: fc.nat(), onProject: fc.boolean(), at: fc.nat() }),
  fc.record({ op: fc.constant('move-group' as const), at: fc.nat(), to: fc.option(fc.nat(), { nil: null }) }),
  fc.record({ op: fc.constant('move-project' as const), at: fc.nat(), to: fc.nat() }),
  fc.record({ op: fc.constant('new-group' as const), under: fc.nat() }),
  fc.record({ op: fc.constant('new-project' as const), under: fc.nat() }),
  fc.record({ op: fc.constant('delete-group' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('bulk-global' as const), level: fc.constantFrom(...LEVELS) }),
);
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

let made = 0;

async function ids(table: 'users' | 'groups' | 'projects'): Promise<number[]> {
  const { rows } = await sql<{ id: string }>`select id from ${sql.table(table)} order by id`.execute(db);
  return rows.map((r) => Number(r.id));
}

const pick = (list: number[], i: number) => (list.length ? list[i % list.length] : undefined);

async function newGroup(parent: number | undefined) {
  const n = ++made;
  const parentPath = parent
    ? (await sql<{ full_path: string }>`select full_path from groups where id = ${parent}`.execute(db)).rows[0]
        ?.full_path
    : undefined;
  const path = `g${n}`;
  await sql`insert into groups (parent_id, path, name, full_path, visibility)
    values (${parent ?? null}, ${path}, ${path}, ${parentPath ? `${parentPath}/${path}` : path}, 'private')`.execute(
    db,
  );
}

async function newProject(group: number) {
  const n = ++made;
  await sql`insert into projects (group_id, path, name, path_with_namespace, visibility)
    values (${group}, ${`p${n}`}, ${`p${n}`}, ${`x/p${n}`}, 'private')`.execute(db);
}

async function apply(op: Op): Promise<void> {
  const users = await ids('users');
  const groups = await ids('groups');
  const projects = await ids('projects');
  switch (op.op) {
    case 'setting':
    case 'unset': {
      const user = pick(users, op.user)!;
      const group = op.where === 'group' ? pick(groups, op.at) : null;
      const project = op.where === 'project' ? pick(projects, op.at) : null;
      if (group === undefined || project === undefined) return;
      await sql`delete from notification_settings where user_id = ${user}
        and group_id is not distinct from ${group}::bigint and project_id is not distinct from ${project}::bigint`.execute(
        db,
      );
      if (op.op === 'unset') return;
      const flags = Object.fromEntries(op.flags.map((f) => [f, true]));
      await db
        .insertInto('notification_settings')
        .values({
          user_id: user,
          group_id: group,
          project_id: project,
          level: op.level,
          notification_email: op.email && op.where !== 'project' ? `n${user}@example.org` : null,
          ...flags,
        })
        .execute();
      return;
    }
    case 'join':
    case 'leave': {
      const user = pick(users, op.user)!;
      const at = pick(op.onProject ? projects : groups, op.at);
      if (at === undefined) return;
      const column = op.onProject ? sql`project_id` : sql`group_id`;
      if (op.op === 'leave') {
        await sql`delete from members where user_id = ${user} and ${column} = ${at}`.execute(db);
        return;
      }
      await sql`insert into members (user_id, ${column}, access_level) values (${user}, ${at}, 30) on conflict do nothing`.execute(
        db,
      );
      return;
    }
    case 'move-group': {
      const group = pick(groups, op.at);
      const to = op.to === null ? null : pick(groups, op.to);
      if (group === undefined || to === undefined) return;
      // Never under itself or its own subtree.
      const { rows } = await sql<{ id: string }>`
        with recursive below (id) as (select ${group}::bigint union select g.id from groups g join below b on g.parent_id = b.id)
        select id from below where id = ${to}::bigint`.execute(db);
      if (rows.length) return;
      await sql`update groups set parent_id = ${to}::bigint where id = ${group}`.execute(db);
      return;
    }
    case 'move-project': {
      const project = pick(projects, op.at);
      const to = pick(groups, op.to);
      if (project === undefined || to === undefined) return;
      await sql`update projects set group_id = ${to} where id = ${project}`.execute(db);
      return;
    }
    case 'new-group':
      return newGroup(pick(groups, op.under));
    case 'new-project': {
      const group = pick(groups, op.under);
      if (group !== undefined) await newProject(group);
      return;
    }
    case 'delete-group': {
      const group = pick(groups, op.at);
      if (group !== undefined && groups.length > 1) await sql`delete from groups where id = ${group}`.execute(db);
      return;
    }
    case 'bulk-global':
      // One statement changing every user's global row: many users at once.
      await sql`insert into notification_settings (user_id, level)
        select id, ${op.level} from users
        on conflict (user_id) where group_id is null and project_id is null do update set level = excluded.level`.execute(
        db,
      );
      return;
  }
}

async function seedWorld() {
  await resetDatabase(db);
  made = 0;
  await sql`insert into users (username, email, name) select 'u' || i, 'u' || i || '@example.com', 'u' || i
    from generate_series(1, 6) i`.execute(db);
  await newGroup(undefined);
  const [root] = await ids('groups');
  await newGroup(root);
  await newProject(root!);
}

describe('the notification subscriptions list', () => {
  it('is installed from the rule as the application generates it, and a changed rule is refused', async () => {
    await expect(assertSubscriptionRulesCurrent(db)).resolves.toBeUndefined();
    // What a rule changed without its migration looks like to the check: another body installed
    // (in a transaction rolled back after).
    await db.connection().execute(async (c) => {
      await sql`begin`.execute(c);
      try {
        await sql`create or replace function notification_subscription_rows(p_groups bigint[], p_projects bigint[])
          returns table (target_type text, target_id bigint, user_id bigint, level text, source_type text,
            source_id bigint, flags integer, group_email text, global_email text, member boolean)
          language sql stable as $$ select null::text, null::bigint, null::bigint, null::text, null::text,
            null::bigint, null::integer, null::text, null::text, null::boolean where false $$`.execute(c);
        await expect(assertSubscriptionRulesCurrent(c)).rejects.toThrow(
          "the database's notification_subscription_rows are not this version's notification rules: a migration must install them",
        );
      } finally {
        await sql`rollback`.execute(c);
      }
    });
    await expect(assertSubscriptionRulesCurrent(db)).resolves.toBeUndefined();
  });

  it('stays what the rule computes from scratch through random sequences of writes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
        await seedWorld();
        for (const op of ops) {
          await apply(op);
          const { kept, computed } = await keptAndComputed();
          expect(kept, JSON.stringify(op)).toEqual(computed);
        }
      }),
      { numRuns: 60 },
    );
  }, 300_000);

  it('is not empty where it should not be: a watcher of a group is listed on its projects', async () => {
    await seedWorld();
    const [root] = await ids('groups');
    const [project] = await ids('projects');
    const [user] = await ids('users');
    await sql`insert into members (user_id, group_id, access_level) values (${user}, ${root}, 30)`.execute(db);
    await sql`insert into notification_settings (user_id, level, new_issue) values (${user}, 'custom', true)`.execute(
      db,
    );
    const { rows } = await sql<Row>`
      select level, source_type, source_id, flags, member from notification_subscriptions
       where user_id = ${user} and project_id = ${project}`.execute(db);
    expect(rows).toEqual([
      {
        level: 'custom',
        source_type: 'global',
        source_id: null,
        flags: 2 ** NOTIFICATION_EVENTS.indexOf('new_issue'),
        member: true,
      },
    ]);
  });

  it('is recomputed by a write that changes a setting, and left alone by one that writes it again', async () => {
    await seedWorld();
    const [root] = await ids('groups');
    const [project] = await ids('projects');
    const [user] = await ids('users');
    await sql`insert into members (user_id, group_id, access_level) values (${user}, ${root}, 30)`.execute(db);
    const upsert = (level: string) =>
      sql`insert into notification_settings (user_id, project_id, level) values (${user}, ${project}, ${level})
        on conflict (user_id, project_id) where project_id is not null
        do update set level = excluded.level, updated_at = now()`.execute(db);
    // The row's version (xmin) tells whether the refresh deleted and wrote it again.
    const version = async () =>
      (
        await sql<{ xmin: string; level: string }>`
          select xmin::text, level from notification_subscriptions where user_id = ${user} and project_id = ${project}`.execute(
          db,
        )
      ).rows[0];
    await upsert('watch');
    const first = await version();
    expect(first?.level).toBe('watch');
    await upsert('watch');
    expect(await version()).toEqual(first);
    await upsert('custom');
    const changed = await version();
    expect(changed?.level).toBe('custom');
    expect(changed?.xmin).not.toBe(first?.xmin);
  });

  it("holds under concurrent writes to one user's settings: the second waits and sees the first", async () => {
    await seedWorld();
    const [root] = await ids('groups');
    const [project] = await ids('projects');
    const [user] = await ids('users');
    await sql`insert into members (user_id, group_id, access_level) values (${user}, ${root}, 30)`.execute(db);
    await sql`insert into notification_settings (user_id, level) values (${user}, 'participating')`.execute(db);
    await db.connection().execute(async (first) => {
      await db.connection().execute(async (second) => {
        // The first turns the project off; the second, before the first commits, starts watching
        // everything. The truth after both: a watcher whose project says disabled.
        await sql`begin`.execute(first);
        await sql`insert into notification_settings (user_id, project_id, level) values (${user}, ${project}, 'disabled')`.execute(
          first,
        );
        await sql`begin`.execute(second);
        const { rows: pid } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(second);
        const waiting = sql`update notification_settings set level = 'watch'
          where user_id = ${user} and group_id is null and project_id is null`.execute(second);
        // The second's refresh waits for the first's lock on the user.
        for (let i = 0; ; i++) {
          const { rows } = await sql<{ wait_event: string | null }>`
            select wait_event from pg_stat_activity where pid = ${pid[0]!.pid}`.execute(db);
          if (rows[0]?.wait_event === 'advisory') break;
          if (i > 200) throw new Error('the second refresh never waited for the first');
          await new Promise((r) => setTimeout(r, 25));
        }
        await sql`commit`.execute(first);
        await waiting;
        await sql`commit`.execute(second);
      });
    });
    const { rows } = await sql<Row>`
      select level, source_type from notification_subscriptions where user_id = ${user} and project_id = ${project}`.execute(
      db,
    );
    expect(rows).toEqual([{ level: 'disabled', source_type: 'project' }]);
    const { kept, computed } = await keptAndComputed();
    expect(kept).toEqual(computed);
  });
});
