// Account e-mails: confirmation of secondary addresses and forgotten-password resets.
//
// - user_emails gains a confirmation token (SHA-256 digest of a random 256-bit value, never the
//   value) and when it was sent: one live token per address, replaced on resend, cleared on confirm.
// - password_reset_tokens: at most one per user (a newer request replaces the older), its digest and
//   expiry; deleted when used.
// - Existing primary addresses: every user so far was created by an operator (`users create`, the
//   first-start `root`), who typed the address — as GitLab treats admin-created users with
//   skip_confirmation, they count as confirmed. users.confirmed_at already defaulted to now(); any
//   row without it gets its creation time. Existing secondary addresses came from `users add-email`,
//   which vouched for them, and already carry confirmed_at.
// Frozen in time: never import application code from a migration.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    update users set confirmed_at = created_at where confirmed_at is null;

    alter table user_emails
      add column confirmation_digest text,
      add column confirmation_sent_at timestamptz;
    create unique index user_emails_confirmation_digest on user_emails (confirmation_digest);

    create table password_reset_tokens (
      user_id bigint primary key references users (id) on delete cascade,
      token_digest text not null unique,
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    );
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop table password_reset_tokens;
    drop index user_emails_confirmation_digest;
    alter table user_emails drop column confirmation_digest, drop column confirmation_sent_at;
  `.execute(db);
}
