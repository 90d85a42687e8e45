// Indexes for recipients whose cost follows the event's candidates (service/domain/notifications/
// recipients.ts): the watchers and custom holders at a group or project are read by (source, level)
// — index-only, with the user id included — and the users whose global level holds by (level),
// instead of scanning every member of the tree. The (source, level) indexes cover the source-only
// ones of 0006, which go. Frozen in time: never import application code from a migration.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create index notification_settings_group_level on notification_settings (group_id, level) include (user_id)
      where group_id is not null;
    create index notification_settings_project_level on notification_settings (project_id, level) include (user_id)
      where project_id is not null;
    create index notification_settings_global_level on notification_settings (level) include (user_id)
      where group_id is null and project_id is null;
    drop index notification_settings_group_id;
    drop index notification_settings_project_id;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create index notification_settings_group_id on notification_settings (group_id) where group_id is not null;
    create index notification_settings_project_id on notification_settings (project_id) where project_id is not null;
    drop index notification_settings_group_level, notification_settings_project_level, notification_settings_global_level;
  `.execute(db);
}
