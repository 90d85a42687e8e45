// The service key ring leaves the database (issue 22): a dump that held both the keys and what they
// protect could forge the pending-TOTP cookie and open every TOTP seed. The keys now live in
// LANYARD_HOME/service-keys.json locally and in Secrets Manager deployed. A migration cannot write
// a file, so the move itself happens just before the migrations run, in the local start-up
// (service/local/service-key-file.ts: migrateLocalDatabase, for `npm start`, the CLI and
// `db migrate`): the keys are merged into the file, a new key signs, every seed is sealed again and
// the rows are deleted. This migration then drops the empty table; it refuses while any key is left
// (migrations run some other way), so no key — and no account — is lost. Frozen in time.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from service_keys`.execute(db);
  if (rows[0].n > 0) {
    throw new Error(
      `service_keys still holds ${rows[0].n} key(s): start Lanyard once with its LANYARD_HOME (npm start, or lanyard-admin db migrate), which moves them to LANYARD_HOME/service-keys.json before migrating`,
    );
  }
  await sql`drop table service_keys`.execute(db);
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
