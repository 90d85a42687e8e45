// Brute-force limits that hold under concurrency (issue 22): an account's attempts are reserved
// before the credential is checked, each with a ticket (attempt_seq), and a success clears only the
// reservations up to its own ticket (attempts_cleared_seq). A rotated refresh token counts the
// retries it has answered (refresh_retries) and notes when the token it was rotated into was itself
// presented (successor_used_at): either ends its retries. Frozen in time: never import
// application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table users
      add column attempt_seq bigint not null default 0,
      add column attempts_cleared_seq bigint not null default 0;
    alter table oauth_access_tokens
      add column refresh_retries smallint not null default 0,
      add column successor_used_at timestamptz;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table users drop column attempt_seq, drop column attempts_cleared_seq;
    alter table oauth_access_tokens drop column refresh_retries, drop column successor_used_at;
  `.execute(db);
}
