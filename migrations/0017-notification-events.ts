// Notification events (issue 25): an event posted by another service (or `notify send`) and the
// e-mails it caused. One row per event, unique per caller, scope (project or group) and idempotency
// key, so a retry — even one that arrives while the first is still in its transaction — finds the
// first answer instead of mailing twice (the unique index makes the second insert wait, then yield).
// One row per recipient links the user, the engine's reason and the outbox message, so `notify
// events show` can say who was e-mailed, why, and the delivery state of each message.
// Frozen in time: never import application code from a migration.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table notification_events (
      id bigint generated always as identity primary key,
      -- Who posted it: 'application:<id>' or 'user:<id>' (idempotency keys are per caller).
      caller text not null check (length(caller) between 1 and 100),
      project_id bigint references projects (id) on delete cascade,
      group_id bigint references groups (id) on delete cascade,
      event text not null,
      target_type text not null check (target_type in ('issue', 'merge_request', 'pipeline', 'release', 'project')),
      target_ref bigint not null check (target_ref > 0),
      target_title text not null,
      target_url text not null,
      author_id bigint references users (id) on delete set null,
      summary text,
      idempotency_key text not null check (length(idempotency_key) between 1 and 255),
      -- SHA-256 of the request as parsed: the same key with a different event is refused.
      request_digest text not null,
      recipient_count integer not null default 0 check (recipient_count >= 0),
      created_at timestamptz not null default now(),
      check ((project_id is null) <> (group_id is null))
    );
    create unique index notification_events_idempotency
      on notification_events (caller, coalesce(project_id, 0), coalesce(group_id, 0), idempotency_key);

    create table notification_event_recipients (
      event_id bigint not null references notification_events (id) on delete cascade,
      user_id bigint not null references users (id) on delete cascade,
      reason text not null,
      -- The message (null once the retention purge removed it).
      mail_id bigint references mail_outbox (id) on delete set null,
      primary key (event_id, user_id)
    );
    create index notification_event_recipients_mail on notification_event_recipients (mail_id);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table notification_event_recipients; drop table notification_events`.execute(db);
}
