// Back-channel logout and active sessions (issue 26). Applications get OpenID Connect Back-Channel
// Logout 1.0's `backchannel_logout_uri` and `backchannel_logout_session_required`; sessions keep
// what the active-sessions page shows (User-Agent, address, last seen); codes are found by their
// session's sid when it ends; and `backchannel_logout_deliveries` is the durable outbox of logout
// tokens, written in the transaction that ends a session and drained by the mail sender's loop.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table oauth_applications
      add column backchannel_logout_uri text check (length(backchannel_logout_uri) <= 2000),
      add column backchannel_logout_session_required boolean not null default false;

    alter table web_sessions
      add column user_agent text check (length(user_agent) <= 1000),
      add column ip_address text check (length(ip_address) <= 100),
      add column last_seen_at timestamptz not null default now();

    -- Which applications received an ID token in a session: its used codes, found by sid.
    create index oauth_authorization_codes_sid on oauth_authorization_codes (sid) where sid is not null;

    create table backchannel_logout_deliveries (
      id bigint generated always as identity primary key,
      -- The logout token's jti: the same on every attempt, so a relying party can drop a repeat.
      jti uuid not null unique default gen_random_uuid(),
      application_id bigint not null references oauth_applications (id) on delete cascade,
      client_id text not null,
      uri text not null,
      sub text not null,
      sid text not null,
      reason text not null check (length(reason) between 1 and 50),
      status text not null default 'pending' check (status in ('pending', 'sending', 'sent', 'failed')),
      attempts integer not null default 0 check (attempts >= 0),
      next_attempt_at timestamptz not null default now(),
      locked_until timestamptz,
      last_error text,
      response_status integer,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      sent_at timestamptz,
      unique (application_id, sid)
    );
    create index backchannel_logout_deliveries_due on backchannel_logout_deliveries (next_attempt_at, id)
      where status = 'pending';
    create index backchannel_logout_deliveries_lapsed on backchannel_logout_deliveries (locked_until)
      where status = 'sending';
    create index backchannel_logout_deliveries_status_updated on backchannel_logout_deliveries (status, updated_at);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop table backchannel_logout_deliveries;
    drop index oauth_authorization_codes_sid;
    alter table web_sessions drop column user_agent, drop column ip_address, drop column last_seen_at;
    alter table oauth_applications drop column backchannel_logout_uri, drop column backchannel_logout_session_required;
  `.execute(db);
}
