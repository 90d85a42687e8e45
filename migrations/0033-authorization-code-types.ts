// Issue 30: PostgreSQL re-reads and re-prepares a table's CHECK constraints (their stored text
// parsed back into expressions) in every statement that inserts or updates a row, and evaluates
// every one of them on every update, whichever columns it sets. oauth_authorization_codes had five
// (nonce, sid and dpop_jkt lengths, the PKCE method's values, challenge and method together), paid
// by each code's insert and again by its exchange, which only stamps used_at: 13 % of the insert's
// backend CPU and 6 % of the exchange's. The same rules as column types, checked only where a value
// is written: varchar(n) for the lengths (the same limits, in characters), an enum for the method.
// The method is written by one statement (domain/authorization-codes.ts), null exactly when the
// challenge is; the exchange refuses a challenge without a known method. The type changes rewrite
// the table under its lock: a small one (codes live ten minutes, and retention purges them).
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_authorization_codes
      drop constraint oauth_authorization_codes_check,
      drop constraint oauth_authorization_codes_code_challenge_method_check,
      drop constraint oauth_authorization_codes_nonce_check,
      drop constraint oauth_authorization_codes_sid_check,
      drop constraint oauth_authorization_codes_dpop_jkt_check;
    create type oauth_pkce_method as enum ('S256', 'plain');
    alter table oauth_authorization_codes
      alter column code_challenge_method type oauth_pkce_method using code_challenge_method::oauth_pkce_method,
      alter column nonce type varchar(1024),
      alter column sid type varchar(64),
      alter column dpop_jkt type varchar(64);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_authorization_codes
      alter column code_challenge_method type text,
      alter column nonce type text,
      alter column sid type text,
      alter column dpop_jkt type text,
      add constraint oauth_authorization_codes_check check ((code_challenge is null) = (code_challenge_method is null)),
      add constraint oauth_authorization_codes_code_challenge_method_check
        check (code_challenge_method in ('S256', 'plain')),
      add constraint oauth_authorization_codes_nonce_check check (length(nonce) <= 1024),
      add constraint oauth_authorization_codes_sid_check check (length(sid) <= 64),
      add constraint oauth_authorization_codes_dpop_jkt_check check (length(dpop_jkt) <= 64);
    drop type oauth_pkce_method;
  `.execute(db);
}
