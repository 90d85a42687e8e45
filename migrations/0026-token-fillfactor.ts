// Issue 30: every refresh stamps the row of the token it rotates (refreshed_at, refresh_retries)
// and its parent's (successor_used_at), and every code exchange stamps the code (used_at). None of
// those columns is indexed, so PostgreSQL can update the row in place on its own page (a HOT
// update: no new entry in any of the table's indexes) — but only when that page has room, and a
// table filled at the default fillfactor (100) has none: each stamp then wrote a new row version
// and an entry in every index (eight on oauth_access_tokens). Leaving a fifth of each page free
// keeps the stamps HOT. Pages written before this migration keep their fill until rewritten.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_access_tokens set (fillfactor = 80);
    alter table oauth_authorization_codes set (fillfactor = 80);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_access_tokens reset (fillfactor);
    alter table oauth_authorization_codes reset (fillfactor);
  `.execute(db);
}
