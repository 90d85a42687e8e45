// OpenID Connect: what the ID token needs from the authorization request, kept with the code
// (OIDC Core §3.1.2.1, §2): the `nonce` the client sent, and `auth_time`, when the user signed in.
// A refresh finds both through the token's authorization_code_id. Frozen: no application imports.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_authorization_codes
      add column nonce text check (length(nonce) <= 1024),
      add column auth_time timestamptz
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table oauth_authorization_codes drop column nonce, drop column auth_time`.execute(db);
}
