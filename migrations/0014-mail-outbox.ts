// The mail outbox: one row per message, written in the transaction of the change that causes it
// and drained by the sender (service/domain/mail/). The Message-ID is fixed at insert, so every
// attempt, including a retry after a crash, sends the same id (at-least-once, duplicates
// recognisable). `raw` is the RFC 5322 message as first handed to a transport; later attempts
// send those bytes again. Frozen in time: never import application code from a migration.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table mail_outbox (
      id bigint generated always as identity primary key,
      message_id text not null unique check (message_id ~ '^<[^<>@ ]+@[^<>@ ]+>$'),
      kind text not null check (length(kind) between 1 and 100),
      to_address text not null check (length(to_address) between 3 and 320),
      from_address text,
      subject text not null,
      text_body text not null,
      html_body text not null,
      headers jsonb not null default '{}'::jsonb,
      raw text,
      status text not null default 'pending' check (status in ('pending', 'sending', 'sent', 'failed')),
      attempts integer not null default 0 check (attempts >= 0),
      next_attempt_at timestamptz not null default now(),
      locked_until timestamptz,
      last_error text,
      transport_response text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      sent_at timestamptz
    );
    -- The drain: due pending rows in order, and 'sending' rows whose claim lapsed (a crashed sender).
    create index mail_outbox_due on mail_outbox (next_attempt_at, id) where status = 'pending';
    create index mail_outbox_lapsed on mail_outbox (locked_until) where status = 'sending';
    -- Listing by status, and the retention purge of sent and failed rows.
    create index mail_outbox_status_updated on mail_outbox (status, updated_at);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table mail_outbox`.execute(db);
}
