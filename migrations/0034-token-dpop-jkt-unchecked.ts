// Issue 30: no CHECK on oauth_access_tokens.dpop_jkt. PostgreSQL parses a table's CHECK constraints
// back from their stored text and prepares them in every statement that inserts or updates a row
// (migration 0033 on the codes), so each refresh rotation, which inserts a row and stamps two,
// paid for this one (≈ 13 µs of a rotation's ≈ 300 µs of backend CPU, measured interleaved). A
// token's dpop_jkt is never a request's text: it is the JWK SHA-256 thumbprint of a DPoP proof's
// key that the service computes (43 characters; the codes' dpop_jkt, which an authorization
// request names, keeps its limit as varchar(64)). Unlike 0033's type changes, dropping a
// constraint rewrites nothing, so the large tokens table takes no lock beyond an instant.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table oauth_access_tokens drop constraint oauth_access_tokens_dpop_jkt_check`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_access_tokens add constraint oauth_access_tokens_dpop_jkt_check check (length(dpop_jkt) <= 64)
  `.execute(db);
}
