// Addresses that hard-bounced or complained (issue 25): no e-mail goes to one while it has a row
// here that nobody cleared. `address` is the lower-cased addr-spec; a cleared row stays as history,
// and the partial unique index keeps at most one live row per address. Frozen in time: never
// import application code from a migration.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table mail_suppressions (
      id bigint generated always as identity primary key,
      address text not null check (address = lower(address) and length(address) between 3 and 320),
      reason text not null check (reason in ('bounce', 'complaint')),
      detail text not null default '' check (length(detail) <= 1000),
      source text not null check (length(source) between 1 and 100),
      created_at timestamptz not null default now(),
      cleared_at timestamptz,
      cleared_by text
    );
    create unique index mail_suppressions_live on mail_suppressions (address) where cleared_at is null;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table mail_suppressions`.execute(db);
}
