// Deleting a row must never scan a table. Each foreign key's ON DELETE action (and each lookup by
// an owner) runs a query on the referencing columns; without an index that leads with them, it
// reads the whole referencing table once per deleted row.
// - oauth_access_tokens.parent_id loses its foreign key. Its ON DELETE SET NULL had no index to
//   use, so the retention purge, which deletes rotated tokens by the thousand, scanned the whole
//   tokens table for each one: 18,000 rotated rows of 20,000 took 24 s, 72,000 of 80,000 took
//   452 s (1.5 s without the action). Nulling the link also cut a chain wherever a rotated token
//   was purged, so a replay of the chain's first token (kept while its chain lives) no longer
//   reached the live tokens below it. The link now stays as written and may name a purged row
//   (identity ids are never reused); it is followed only within its chain (family_id, indexed),
//   and the chain's first token reaches its whole chain through family_id. A rotation's insert
//   also checks one key fewer.
// - oauth_authorization_codes.application_id gets an index: deleting an application (its owner,
//   RFC 7592, or the purge of unused dynamically registered clients, which also asks whether each
//   has a recent code) scanned the codes table, kept for a week after use, once per application.
// - notification_events.project_id and group_id get one each: deleting a group deletes its
//   projects and subgroups, each of which scanned the events table.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_access_tokens drop constraint oauth_access_tokens_parent_id_fkey;
    create index oauth_authorization_codes_application_id on oauth_authorization_codes (application_id);
    create index notification_events_project_id on notification_events (project_id) where project_id is not null;
    create index notification_events_group_id on notification_events (group_id) where group_id is not null;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop index notification_events_group_id, notification_events_project_id, oauth_authorization_codes_application_id;
    update oauth_access_tokens t set parent_id = null
      where parent_id is not null and not exists (select from oauth_access_tokens p where p.id = t.parent_id);
    alter table oauth_access_tokens add constraint oauth_access_tokens_parent_id_fkey
      foreign key (parent_id) references oauth_access_tokens (id) on delete set null;
  `.execute(db);
}
