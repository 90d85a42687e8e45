// Issue 30: a refresh chain names its authorization code once, on its first token. Every rotation
// copied the code's id into the new row, so each inserted row paid a foreign-key check (a query
// PostgreSQL runs per row: ~12 µs of the rotation's ~330) and an entry in the code-id index. The
// rows refreshed from that first token reach the code through family_id (the first token's id),
// which the rotation already reads with the chain's lock; a replayed code revokes the chain
// through it. Existing rotated rows drop their copy, and the index keeps only rows that name a
// code. Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    update oauth_access_tokens set authorization_code_id = null
      where family_id is not null and authorization_code_id is not null;
    drop index oauth_access_tokens_authorization_code_id;
    create index oauth_access_tokens_authorization_code_id on oauth_access_tokens (authorization_code_id)
      where authorization_code_id is not null;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop index oauth_access_tokens_authorization_code_id;
    create index oauth_access_tokens_authorization_code_id on oauth_access_tokens (authorization_code_id);
    update oauth_access_tokens t set authorization_code_id = first.authorization_code_id
      from oauth_access_tokens first
      where t.family_id = first.id and first.authorization_code_id is not null and t.authorization_code_id is null;
  `.execute(db);
}
