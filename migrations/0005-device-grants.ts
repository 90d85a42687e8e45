// Device authorization grants (RFC 8628). Frozen in time: never import application code from a migration.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    -- One row per device authorization request. Both codes are stored as SHA-256 digests (the user
    -- code normalised first: upper case, no dash), so a database read yields neither. status moves
    -- pending → approved | denied, and approved → used exactly once (the row is locked to poll).
    create table oauth_device_grants (
      id bigint generated always as identity primary key,
      application_id bigint not null references oauth_applications (id) on delete cascade,
      device_code_digest text not null unique,
      user_code_digest text not null,
      scopes text[] not null,
      status text not null default 'pending' check (status in ('pending', 'approved', 'denied', 'used')),
      user_id bigint references users (id) on delete cascade,
      interval_seconds integer not null check (interval_seconds > 0),
      last_polled_at timestamptz,
      expires_at timestamptz not null,
      created_at timestamptz not null default now(),
      check ((status = 'pending') = (user_id is null))
    );
    create index oauth_device_grants_user_code_digest on oauth_device_grants (user_code_digest);
    create index oauth_device_grants_expires_at on oauth_device_grants (expires_at);
    create index oauth_device_grants_application_id on oauth_device_grants (application_id);
    create index oauth_device_grants_user_id on oauth_device_grants (user_id);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table oauth_device_grants`.execute(db);
}
