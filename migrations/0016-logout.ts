// Logout (issue 26). `sid` (OpenID Connect Back-Channel/RP-Initiated Logout: the browser session's
// id in ID tokens) kept with the authorization code, so the code exchange and every refresh of its
// tokens sign the same sid; and each application's registered post_logout_redirect_uris (RP-Initiated
// Logout 1.0 §3: exact matches only). Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_authorization_codes add column sid text check (length(sid) <= 64);
    alter table oauth_applications add column post_logout_redirect_uris text[] not null default '{}';
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_authorization_codes drop column sid;
    alter table oauth_applications drop column post_logout_redirect_uris;
  `.execute(db);
}
