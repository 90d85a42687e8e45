// Indexes for the retention purge (service/domain/retention.ts): each batch finds expired rows by
// these columns instead of scanning the whole table. Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create index oauth_access_tokens_expires_at on oauth_access_tokens (expires_at);
    create index oauth_authorization_codes_expires_at on oauth_authorization_codes (expires_at);
    create index rate_limit_counters_window_start on rate_limit_counters (window_start);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop index oauth_access_tokens_expires_at, oauth_authorization_codes_expires_at, rate_limit_counters_window_start;
  `.execute(db);
}
