// The initial data model. Frozen in time: never import application code from a migration.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table users (
      id bigint generated always as identity primary key,
      username text not null check (username ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$'),
      email text not null check (email ~ '^[^@\\s]+@[^@\\s]+$'),
      name text not null,
      password_hash text,
      is_admin boolean not null default false,
      state text not null default 'active' check (state in ('active', 'blocked')),
      otp_secret text,
      otp_last_step bigint,
      bio text not null default '',
      public_email text,
      avatar_url text,
      external boolean not null default false,
      private_profile boolean not null default false,
      can_create_group boolean not null default true,
      can_create_project boolean not null default true,
      failed_attempts integer not null default 0,
      locked_until timestamptz,
      confirmed_at timestamptz default now(),
      current_sign_in_at timestamptz,
      last_sign_in_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index users_username_lower on users (lower(username));
    create unique index users_email_lower on users (lower(email));

    create table user_emails (
      id bigint generated always as identity primary key,
      user_id bigint not null references users (id) on delete cascade,
      email text not null check (email ~ '^[^@\\s]+@[^@\\s]+$'),
      confirmed_at timestamptz,
      created_at timestamptz not null default now()
    );
    create unique index user_emails_email_lower on user_emails (lower(email));
    create index user_emails_user_id on user_emails (user_id);

    create table personal_access_tokens (
      id bigint generated always as identity primary key,
      user_id bigint not null references users (id) on delete cascade,
      name text not null check (length(name) between 1 and 255),
      token_digest text not null unique,
      scopes text[] not null check (cardinality(scopes) > 0),
      expires_at date,
      revoked_at timestamptz,
      last_used_at timestamptz,
      created_at timestamptz not null default now()
    );
    create index personal_access_tokens_user_id on personal_access_tokens (user_id);

    create table oauth_applications (
      id bigint generated always as identity primary key,
      uid text not null unique check (uid ~ '^[0-9a-f]{64}$'),
      secret_digest text not null,
      name text not null check (length(name) between 1 and 255),
      redirect_uris text[] not null check (cardinality(redirect_uris) > 0),
      scopes text[] not null check (cardinality(scopes) > 0),
      confidential boolean not null default true,
      trusted boolean not null default false,
      owner_id bigint references users (id) on delete cascade,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index oauth_applications_owner_id on oauth_applications (owner_id);

    create table oauth_authorization_codes (
      id bigint generated always as identity primary key,
      application_id bigint not null references oauth_applications (id) on delete cascade,
      user_id bigint not null references users (id) on delete cascade,
      code_digest text not null unique,
      redirect_uri text not null,
      scopes text[] not null,
      code_challenge text,
      code_challenge_method text check (code_challenge_method in ('S256', 'plain')),
      expires_at timestamptz not null,
      used_at timestamptz,
      created_at timestamptz not null default now(),
      check ((code_challenge is null) = (code_challenge_method is null))
    );

    -- One row per access token, with the refresh token issued alongside it (Doorkeeper's model).
    -- family_id is the first token of a refresh chain, parent_id the token it was refreshed from,
    -- authorization_code_id the code the chain came from: enough to revoke descendants in one update.
    create table oauth_access_tokens (
      id bigint generated always as identity primary key,
      application_id bigint references oauth_applications (id) on delete cascade,
      user_id bigint not null references users (id) on delete cascade,
      token_digest text not null unique,
      refresh_token_digest text unique,
      scopes text[] not null,
      expires_at timestamptz not null,
      revoked_at timestamptz,
      refreshed_at timestamptz,
      parent_id bigint references oauth_access_tokens (id) on delete set null,
      family_id bigint references oauth_access_tokens (id) on delete cascade,
      authorization_code_id bigint references oauth_authorization_codes (id) on delete set null,
      created_at timestamptz not null default now()
    );
    create index oauth_access_tokens_family_id on oauth_access_tokens (family_id);
    create index oauth_access_tokens_authorization_code_id on oauth_access_tokens (authorization_code_id);
    create index oauth_access_tokens_user_id on oauth_access_tokens (user_id);
    create index oauth_access_tokens_application_id on oauth_access_tokens (application_id);

    create table groups (
      id bigint generated always as identity primary key,
      parent_id bigint references groups (id) on delete cascade,
      path text not null check (path ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$'),
      name text not null,
      full_path text not null,
      visibility text not null default 'private' check (visibility in ('private', 'internal', 'public')),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index groups_full_path_lower on groups (lower(full_path));
    create index groups_parent_id on groups (parent_id);

    create table projects (
      id bigint generated always as identity primary key,
      group_id bigint not null references groups (id) on delete cascade,
      path text not null check (path ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$'),
      name text not null,
      path_with_namespace text not null,
      visibility text not null default 'private' check (visibility in ('private', 'internal', 'public')),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index projects_path_with_namespace_lower on projects (lower(path_with_namespace));
    create index projects_group_id on projects (group_id);

    create table members (
      id bigint generated always as identity primary key,
      user_id bigint not null references users (id) on delete cascade,
      group_id bigint references groups (id) on delete cascade,
      project_id bigint references projects (id) on delete cascade,
      access_level integer not null check (access_level in (10, 20, 30, 40, 50)),
      created_at timestamptz not null default now(),
      check ((group_id is null) <> (project_id is null))
    );
    create unique index members_user_group on members (user_id, group_id) where group_id is not null;
    create unique index members_user_project on members (user_id, project_id) where project_id is not null;
    create index members_group_id on members (group_id);
    create index members_project_id on members (project_id);

    -- Global settings have neither group_id nor project_id; notification_email is global only.
    create table notification_settings (
      id bigint generated always as identity primary key,
      user_id bigint not null references users (id) on delete cascade,
      group_id bigint references groups (id) on delete cascade,
      project_id bigint references projects (id) on delete cascade,
      level text not null check (level in ('disabled', 'participating', 'watch', 'global', 'mention', 'custom')),
      notification_email text,
      new_note boolean not null default false,
      new_issue boolean not null default false,
      reopen_issue boolean not null default false,
      close_issue boolean not null default false,
      reassign_issue boolean not null default false,
      new_merge_request boolean not null default false,
      reopen_merge_request boolean not null default false,
      close_merge_request boolean not null default false,
      reassign_merge_request boolean not null default false,
      merge_merge_request boolean not null default false,
      failed_pipeline boolean not null default false,
      success_pipeline boolean not null default false,
      updated_at timestamptz not null default now(),
      check (group_id is null or project_id is null),
      check (notification_email is null or (group_id is null and project_id is null))
    );
    create unique index notification_settings_global on notification_settings (user_id) where group_id is null and project_id is null;
    create unique index notification_settings_group on notification_settings (user_id, group_id) where group_id is not null;
    create unique index notification_settings_project on notification_settings (user_id, project_id) where project_id is not null;

    -- Server-side web sessions: the cookie carries an id; only its SHA-256 digest is stored.
    create table web_sessions (
      id_digest text primary key,
      user_id bigint references users (id) on delete cascade,
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    );
    create index web_sessions_user_id on web_sessions (user_id);
    create index web_sessions_expires_at on web_sessions (expires_at);

    -- Signing keys for sessions and CSRF tokens, a key ring: the newest signs, all unexpired verify.
    create table service_keys (
      id bigint generated always as identity primary key,
      purpose text not null check (purpose in ('session')),
      secret text not null,
      created_at timestamptz not null default now(),
      retired_at timestamptz
    );

    -- Failed credential checks per account or client address, in fixed windows (works on Lambda).
    create table rate_limit_counters (
      key text primary key,
      window_start timestamptz not null,
      count integer not null
    );

    create table audit_events (
      id bigint generated always as identity primary key,
      actor text not null,
      action text not null,
      target_type text,
      target_id text,
      details jsonb not null default '{}',
      ip_address text,
      created_at timestamptz not null default now()
    );
    create index audit_events_created_at on audit_events (created_at);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop table audit_events, rate_limit_counters, service_keys, web_sessions, notification_settings,
      members, projects, groups, oauth_access_tokens, oauth_authorization_codes, oauth_applications,
      personal_access_tokens, user_emails, users;
  `.execute(db);
}
