// Agents (issue 27). RFC 8707 resource indicators: the resources an authorization request, a device
// grant and a token's grant were for (`resources`, carried along a refresh chain), and each access
// token's audience (`audience`; empty = unbound, accepted by /api/v4 as before). Per application,
// `allowed_resources` (null = any absolute https URI or http loopback one). RFC 7591/7592 dynamic
// client registration: `dynamically_registered`, and `registration_access_token_digest` (SHA-256 of
// the RFC 7592 token, set only on such applications). Frozen in time: never import
// application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_applications add column allowed_resources text[];
    alter table oauth_applications add column dynamically_registered boolean not null default false;
    alter table oauth_applications add column registration_access_token_digest text;
    create index oauth_applications_dynamic on oauth_applications (created_at) where dynamically_registered;
    alter table oauth_authorization_codes add column resources text[] not null default '{}';
    alter table oauth_device_grants add column resources text[] not null default '{}';
    alter table oauth_access_tokens add column resources text[] not null default '{}';
    alter table oauth_access_tokens add column audience text[] not null default '{}';
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    delete from oauth_applications where dynamically_registered;
    alter table oauth_applications drop column allowed_resources;
    alter table oauth_applications drop column dynamically_registered;
    alter table oauth_applications drop column registration_access_token_digest;
    alter table oauth_authorization_codes drop column resources;
    alter table oauth_device_grants drop column resources;
    alter table oauth_access_tokens drop column resources;
    alter table oauth_access_tokens drop column audience;
  `.execute(db);
}
