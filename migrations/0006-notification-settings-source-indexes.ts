// Indexes for notification recipient resolution: the settings at a group or a project are read by
// source (every user's row at each ancestor), which the (user_id, source) unique indexes cannot serve.
// Frozen in time: never import application code from a migration.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index notification_settings_group_id on notification_settings (group_id) where group_id is not null`.execute(
    db,
  );
  await sql`create index notification_settings_project_id on notification_settings (project_id) where project_id is not null`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index notification_settings_group_id`.execute(db);
  await sql`drop index notification_settings_project_id`.execute(db);
}
