// The device grant's ID token said nothing of how the person signed in (no amr or acr, contract
// §7) and took auth_time from the user's latest sign-in, which may be another browser's. The
// approving browser session's sign-in is now kept with the decision, as authorization codes keep
// theirs (0004, 0022). Null for grants decided before this migration.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table oauth_device_grants add column auth_time timestamptz, add column amr text[]`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table oauth_device_grants drop column auth_time, drop column amr`.execute(db);
}
