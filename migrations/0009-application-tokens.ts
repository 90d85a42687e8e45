// Tokens of applications (the client_credentials grant, RFC 6749 §4.4): an access token without a
// user. Only an application's, and never with a refresh token (§4.4.3). Frozen in time: never
// import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_access_tokens alter column user_id drop not null;
    alter table oauth_access_tokens add constraint oauth_access_tokens_owner check (
      user_id is not null or (application_id is not null and refresh_token_digest is null)
    );
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    delete from oauth_access_tokens where user_id is null;
    alter table oauth_access_tokens drop constraint oauth_access_tokens_owner;
    alter table oauth_access_tokens alter column user_id set not null;
  `.execute(db);
}
