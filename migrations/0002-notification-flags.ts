// The 7 notification e-mail events GitLab 17/18 added (contract §4), and the group-level
// notification e-mail (a group's setting may name one; projects still may not).
// Frozen in time: never import application code from a migration.
import { type Kysely, sql } from 'kysely';

const NEW_EVENTS = [
  'new_release',
  'issue_due',
  'push_to_merge_request',
  'change_reviewer_merge_request',
  'fixed_pipeline',
  'moved_project',
  'merge_when_pipeline_succeeds',
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const event of NEW_EVENTS) {
    await sql`alter table notification_settings add column if not exists ${sql.ref(event)} boolean not null default false`.execute(
      db,
    );
  }
  await sql`alter table notification_settings add column if not exists notification_email text`.execute(db);
  // 0001's unnamed check allowed an e-mail on the global row only; find it by its definition.
  await sql`
    do $$
    declare c record;
    begin
      for c in
        select conname from pg_constraint
        where conrelid = 'notification_settings'::regclass and contype = 'c'
          and pg_get_constraintdef(oid) like '%notification_email%'
      loop
        execute format('alter table notification_settings drop constraint %I', c.conname);
      end loop;
    end $$
  `.execute(db);
  await sql`
    alter table notification_settings add constraint notification_settings_email_not_on_projects
      check (notification_email is null or project_id is null)
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table notification_settings drop constraint notification_settings_email_not_on_projects`.execute(db);
  await sql`update notification_settings set notification_email = null where group_id is not null`.execute(db);
  await sql`
    alter table notification_settings add constraint notification_settings_check1
      check (notification_email is null or (group_id is null and project_id is null))
  `.execute(db);
  for (const event of NEW_EVENTS) {
    await sql`alter table notification_settings drop column ${sql.ref(event)}`.execute(db);
  }
}
