// The service key ring leaves the database (issue 22): a dump that held both the keys and what they
// protect could forge the pending-TOTP cookie and open every TOTP seed. The keys now live in
// LANYARD_HOME/service-keys.json locally and in Secrets Manager deployed. A migration cannot write
// a file, so the move itself happens just before the migrations run, in the local start-up
// (service/local/service-key-file.ts: migrateLocalDatabase, for `npm start`, the CLI and
// `db migrate`): the keys are merged into the file, a new key signs, every seed is sealed again and
// the rows are deleted. This migration then drops the empty table; it refuses while any key is left
// (migrations run some other way), so no key — and no account — is lost.
//
// Second (one migration number for this round's hardening): a group or project is never more
// visible than the group it is in (issue 22; GitLab refuses such a child, and the app now does on
// every create and change). Rows from before that break the rule — a public project in a private
// group published the group's name and path — are lowered to their parent's level, top-down so a
// grandchild follows its lowered parent, each change recorded in audit_events (actor
// `migration:0012`). Lowering only ever hides: members keep their access. Frozen in time.
import { type Kysely, sql } from 'kysely';

const CHILD_RANK = sql`(case c.visibility when 'private' then 0 when 'internal' then 10 else 20 end)`;
const PARENT_RANK = sql`(case p.visibility when 'private' then 0 when 'internal' then 10 else 20 end)`;

export async function up(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from service_keys`.execute(db);
  if (rows[0].n > 0) {
    throw new Error(
      `service_keys still holds ${rows[0].n} key(s): start Lanyard once with its LANYARD_HOME (npm start, or lanyard-admin db migrate), which moves them to LANYARD_HOME/service-keys.json before migrating`,
    );
  }
  await sql`drop table service_keys`.execute(db);

  // Groups, level by level from the top (a fixpoint: each pass settles one more level of depth).
  for (;;) {
    const { rows: lowered } = await sql<{ id: string }>`
      update groups c set visibility = p.visibility, updated_at = now()
      from groups p
      where c.parent_id = p.id and ${CHILD_RANK} > ${PARENT_RANK}
      returning c.id::text as id`.execute(db);
    if (!lowered.length) break;
    await audit(
      db,
      'group',
      lowered.map((r) => r.id),
    );
  }
  const { rows: projects } = await sql<{ id: string }>`
    update projects c set visibility = p.visibility, updated_at = now()
    from groups p
    where c.group_id = p.id and ${CHILD_RANK} > ${PARENT_RANK}
    returning c.id::text as id`.execute(db);
  await audit(
    db,
    'project',
    projects.map((r) => r.id),
  );
}

async function audit(db: Kysely<any>, type: 'group' | 'project', ids: string[]): Promise<void> {
  for (const id of ids) {
    await sql`
      insert into audit_events (actor, action, target_type, target_id, details)
      select 'migration:0012', ${`${type}.update`}, ${type}, ${id},
        jsonb_build_object('visibility', visibility, 'reason', 'more visible than its parent group')
      from ${sql.table(type === 'group' ? 'groups' : 'projects')} where id = ${id}::bigint`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  // The table comes back empty: the keys stay in the file (nothing reads the table any more).
  await sql`
    create table service_keys (
      id bigint generated always as identity primary key,
      purpose text not null check (purpose in ('session')),
      secret text not null,
      created_at timestamptz not null default now(),
      retired_at timestamptz
    )
  `.execute(db);
}
