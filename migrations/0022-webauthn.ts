// Passkeys and security keys (issue 29): each person's WebAuthn credentials (the public key in
// COSE form, the sign count, whether it may be synced and is backed up, a name), the ceremonies'
// challenges (single use, short-lived, bound to the browser session that asked for them, stored as
// SHA-256 digests), the users' count of credentials kept by a trigger (so `two_factor_enabled` is
// read from the user's row with no join), and the authentication methods of a sign-in (RFC 8176
// `amr`) carried with the authorization code into the ID tokens of the code and its refreshes.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table webauthn_credentials (
      id bigint generated always as identity primary key,
      user_id bigint not null references users (id) on delete cascade,
      credential_id text not null unique check (length(credential_id) between 16 and 1366),
      public_key bytea not null check (octet_length(public_key) <= 2048),
      sign_count bigint not null default 0 check (sign_count >= 0),
      transports text[] not null default '{}',
      device_type text not null check (device_type in ('singleDevice', 'multiDevice')),
      backed_up boolean not null,
      name text not null check (length(name) between 1 and 100),
      created_at timestamptz not null default now(),
      last_used_at timestamptz,
      unique (user_id, name)
    );
    create index webauthn_credentials_user on webauthn_credentials (user_id);

    create table webauthn_challenges (
      id bigint generated always as identity primary key,
      challenge_digest text not null unique,
      purpose text not null check (purpose in ('registration', 'second_factor', 'passwordless')),
      session_digest text not null,
      user_id bigint references users (id) on delete cascade,
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    );
    create index webauthn_challenges_expires on webauthn_challenges (expires_at);

    alter table users add column webauthn_credential_count integer not null default 0;
    create function webauthn_credential_count() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        update users set webauthn_credential_count = webauthn_credential_count + 1 where id = new.user_id;
      else
        update users set webauthn_credential_count = webauthn_credential_count - 1 where id = old.user_id;
      end if;
      return null;
    end $$;
    create trigger webauthn_credential_count after insert or delete on webauthn_credentials
      for each row execute function webauthn_credential_count();

    alter table oauth_authorization_codes add column amr text[];
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_authorization_codes drop column amr;
    drop table webauthn_challenges;
    drop table webauthn_credentials;
    drop function webauthn_credential_count();
    alter table users drop column webauthn_credential_count;
  `.execute(db);
}
