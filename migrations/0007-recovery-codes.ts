// Two-factor recovery codes: ten single-use codes per user, stored as SHA-256 digests (random
// codes, so a fast hash is right), replaced as a set on enrolment and regeneration.
// Frozen in time: never import application code from a migration.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table user_recovery_codes (
      id bigint generated always as identity primary key,
      user_id bigint not null references users (id) on delete cascade,
      code_digest text not null,
      used_at timestamptz,
      created_at timestamptz not null default now(),
      unique (user_id, code_digest)
    );
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table user_recovery_codes`.execute(db);
}
