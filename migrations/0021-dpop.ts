// DPoP (RFC 9449, issue 27). A token bound to a key keeps the key's JWK thumbprint (`dpop_jkt`,
// the `cnf.jkt` of §6.1); an authorization code may carry the authorize request's `dpop_jkt` (§10);
// an application may require DPoP (`dpop_bound_access_tokens`, §5.2). Proof `jti`s already accepted
// are kept until their `iat` window has passed, keyed by a digest of the key and the jti, so a
// replay is refused on every Lambda instance (§11.1): the primary key makes the insert the check.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_access_tokens add column dpop_jkt text check (length(dpop_jkt) <= 64);
    alter table oauth_authorization_codes add column dpop_jkt text check (length(dpop_jkt) <= 64);
    alter table oauth_applications add column dpop_bound_access_tokens boolean not null default false;
    create table dpop_proofs (
      digest text primary key check (length(digest) = 64),
      expires_at timestamptz not null
    );
    create index dpop_proofs_expires_at on dpop_proofs (expires_at);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop table dpop_proofs;
    alter table oauth_applications drop column dpop_bound_access_tokens;
    alter table oauth_authorization_codes drop column dpop_jkt;
    alter table oauth_access_tokens drop column dpop_jkt;
  `.execute(db);
}
