// The retention job deletes notification events once they are older than the mail retention
// (service/domain/retention.ts): an index on created_at, so each of its batches finds the oldest
// events without reading the whole table.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index notification_events_created_at on notification_events (created_at)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index notification_events_created_at`.execute(db);
}
