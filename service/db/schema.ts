// The one typed view of the database that every module (service, CLI, tests) uses.
import type { ColumnType, Generated, GeneratedAlways, Kysely, Selectable, Transaction } from 'kysely';

/** Insert may omit it where the column has a default. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** bigint ids: pg returns int8 as string by default; createDb parses them to numbers. */
type Id = Generated<number>;

export type Visibility = 'private' | 'internal' | 'public';
export type NotificationLevel = 'disabled' | 'participating' | 'watch' | 'global' | 'mention' | 'custom';

export interface UsersTable {
  id: Id;
  username: string;
  email: string;
  name: string;
  password_hash: string | null;
  is_admin: Generated<boolean>;
  state: Generated<'active' | 'blocked'>;
  otp_secret: string | null;
  otp_last_step: number | null;
  /** Enrol TOTP at the next sign-in (`users set-2fa U on --require-enrolment`); cleared by enrolling. */
  otp_enrolment_required: Generated<boolean>;
  bio: Generated<string>;
  public_email: string | null;
  avatar_url: string | null;
  external: Generated<boolean>;
  private_profile: Generated<boolean>;
  can_create_group: Generated<boolean>;
  can_create_project: Generated<boolean>;
  failed_attempts: Generated<number>;
  locked_until: NullableTimestamp;
  confirmed_at: NullableTimestamp;
  current_sign_in_at: NullableTimestamp;
  last_sign_in_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** How many WebAuthn credentials the user has (kept by a trigger, migration 0022). */
  webauthn_credential_count: Generated<number>;
}

export interface UserEmailsTable {
  id: Id;
  user_id: number;
  email: string;
  confirmed_at: NullableTimestamp;
  /** SHA-256 of the live confirmation token (null once confirmed). */
  confirmation_digest: string | null;
  confirmation_sent_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface PersonalAccessTokensTable {
  id: Id;
  user_id: number;
  name: string;
  token_digest: string;
  scopes: string[];
  /** A calendar date (YYYY-MM-DD); the token works through the end of that day, UTC. */
  expires_at: string | null;
  revoked_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  created_at: Timestamp;
  /** The token this one replaced by rotation (GitLab's previous_personal_access_token_id). */
  previous_personal_access_token_id: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface OAuthApplicationsTable {
  id: Id;
  uid: string;
  secret_digest: string;
  name: string;
  redirect_uris: string[];
  /** RP-Initiated Logout 1.0: where end_session may send the person back (exact matches). */
  post_logout_redirect_uris: Generated<string[]>;
  /** Back-Channel Logout 1.0 §2.2: where logout tokens are POSTed (null: none). */
  backchannel_logout_uri: ColumnType<string | null, string | null | undefined, string | null>;
  /** Back-Channel Logout 1.0 §2.2: the relying party needs `sid` in logout tokens (we always send it). */
  backchannel_logout_session_required: Generated<boolean>;
  scopes: string[];
  confidential: Generated<boolean>;
  trusted: Generated<boolean>;
  /** RFC 9449 §5.2: every token request of this application must carry a DPoP proof. */
  dpop_bound_access_tokens: Generated<boolean>;
  owner_id: number | null;
  /** RFC 8707: the resources this application may ask tokens for; null = any https/loopback URI. */
  allowed_resources: ColumnType<string[] | null, string[] | null | undefined, string[] | null>;
  /** RFC 7591: registered by a client itself (no owner, never trusted, pruned when unused). */
  dynamically_registered: Generated<boolean>;
  /** RFC 7592: set only on dynamically registered applications (SHA-256 of the token). */
  registration_access_token_digest: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface OAuthAuthorizationCodesTable {
  id: Id;
  application_id: number;
  user_id: number;
  code_digest: string;
  redirect_uri: string;
  scopes: string[];
  code_challenge: string | null;
  code_challenge_method: 'S256' | 'plain' | null;
  /** OpenID Connect: the authorization request's nonce, echoed in the ID token. */
  nonce: ColumnType<string | null, string | null | undefined, string | null>;
  /** OpenID Connect: when the user signed in (the ID token's auth_time). */
  auth_time: NullableTimestamp;
  /** OpenID Connect: the browser session's sid (the ID token's `sid`), absent for older codes. */
  sid: ColumnType<string | null, string | null | undefined, string | null>;
  /** RFC 8176: how the person signed in (the ID token's `amr`), absent for older codes. */
  amr: ColumnType<string[] | null, string[] | null | undefined, string[] | null>;
  /** RFC 9449 §10: the authorize request's dpop_jkt; the exchange's proof must use that key. */
  dpop_jkt: ColumnType<string | null, string | null | undefined, string | null>;
  /** RFC 8707: the resources the authorization request named (empty: none). */
  resources: Generated<string[]>;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface OAuthDeviceGrantsTable {
  id: Id;
  application_id: number;
  device_code_digest: string;
  user_code_digest: string;
  scopes: string[];
  status: Generated<'pending' | 'approved' | 'denied' | 'used'>;
  user_id: number | null;
  interval_seconds: number;
  /** RFC 8707: the resources the device authorization request named (empty: none). */
  resources: Generated<string[]>;
  last_polled_at: NullableTimestamp;
  /** When the approving browser session signed in (the ID token's auth_time); null before 0028. */
  auth_time: NullableTimestamp;
  /** RFC 8176: how that session signed in (the ID token's amr and acr); null before 0028. */
  amr: ColumnType<string[] | null, string[] | null | undefined, string[] | null>;
  expires_at: Timestamp;
  created_at: Timestamp;
}

export interface OAuthAccessTokensTable {
  id: Id;
  application_id: number | null;
  /** Null for an application's own token (client_credentials): then no refresh token either. */
  user_id: number | null;
  token_digest: string;
  refresh_token_digest: string | null;
  scopes: string[];
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  refreshed_at: NullableTimestamp;
  parent_id: number | null;
  family_id: number | null;
  authorization_code_id: number | null;
  /** RFC 9449 §6.1: the JWK thumbprint (cnf.jkt) of the key a DPoP-bound token is bound to. */
  dpop_jkt: ColumnType<string | null, string | null | undefined, string | null>;
  /** RFC 8707: the resources of the grant (what a refresh may narrow to), carried along the chain. */
  resources: Generated<string[]>;
  /** RFC 8707: this access token's audience; empty = unbound (accepted by /api/v4 as before). */
  audience: Generated<string[]>;
  created_at: Timestamp;
}

/** RFC 9449 §11.1: DPoP proofs already accepted (sha256 of jkt and jti), until their window ends. */
export interface DpopProofsTable {
  digest: string;
  expires_at: Timestamp;
}

export interface GroupsTable {
  id: Id;
  parent_id: number | null;
  path: string;
  name: string;
  full_path: string;
  visibility: Generated<Visibility>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProjectsTable {
  id: Id;
  group_id: number;
  path: string;
  name: string;
  path_with_namespace: string;
  visibility: Generated<Visibility>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MembersTable {
  id: Id;
  user_id: number;
  group_id: number | null;
  project_id: number | null;
  access_level: 10 | 20 | 30 | 40 | 50;
  created_at: Timestamp;
}

/** GitLab's NotificationSetting::EMAIL_EVENTS, in its order (the order of `events` on the wire). */
export const NOTIFICATION_EVENTS = [
  'new_release',
  'new_note',
  'new_issue',
  'reopen_issue',
  'close_issue',
  'reassign_issue',
  'issue_due',
  'new_merge_request',
  'push_to_merge_request',
  'reopen_merge_request',
  'close_merge_request',
  'reassign_merge_request',
  'change_reviewer_merge_request',
  'merge_merge_request',
  'failed_pipeline',
  'fixed_pipeline',
  'success_pipeline',
  'moved_project',
  'merge_when_pipeline_succeeds',
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];

export type NotificationSettingsTable = {
  id: Id;
  user_id: number;
  group_id: number | null;
  project_id: number | null;
  level: NotificationLevel;
  notification_email: string | null;
  updated_at: Timestamp;
} & { [K in NotificationEvent]: Generated<boolean> };

export interface WebSessionsTable {
  id_digest: string;
  user_id: number | null;
  data: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: Timestamp;
  expires_at: Timestamp;
  /** What the active-sessions page shows (migration 0019): set at sign-in. */
  user_agent: ColumnType<string | null, string | null | undefined, string | null>;
  ip_address: ColumnType<string | null, string | null | undefined, string | null>;
  /** Refreshed at most every few minutes (domain/sessions.ts LAST_SEEN_RESOLUTION_SECONDS). */
  last_seen_at: Timestamp;
}

export interface RateLimitCountersTable {
  key: string;
  window_start: Timestamp;
  count: number;
}

export interface AuditEventsTable {
  id: Id;
  actor: string;
  action: string;
  target_type: string | null;
  target_id: string | null;
  details: ColumnType<Record<string, unknown>, string | undefined, string>;
  ip_address: string | null;
  created_at: Timestamp;
}

export interface UserRecoveryCodesTable {
  id: Id;
  user_id: number;
  code_digest: string;
  used_at: NullableTimestamp;
  created_at: Timestamp;
}

/** A person's passkey or security key (migration 0022). */
export interface WebauthnCredentialsTable {
  id: Id;
  user_id: number;
  /** The credential's id, base64url. */
  credential_id: string;
  /** The COSE public key. */
  public_key: Buffer;
  sign_count: ColumnType<number, number | undefined, number>;
  transports: ColumnType<string[], string[] | undefined, string[]>;
  /** `multiDevice`: may be synced (a passkey); `singleDevice`: bound to one authenticator. */
  device_type: 'singleDevice' | 'multiDevice';
  backed_up: boolean;
  name: string;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
}

/** A WebAuthn ceremony's challenge (migration 0022): single use, short-lived, one browser session's. */
export interface WebauthnChallengesTable {
  id: Id;
  challenge_digest: string;
  purpose: 'registration' | 'second_factor' | 'passwordless';
  session_digest: string;
  user_id: number | null;
  expires_at: Timestamp;
  created_at: Timestamp;
}

export type MailStatus = 'pending' | 'sending' | 'sent' | 'failed';

/** The mail outbox (migration 0014): one row per message, drained by the sender. */
export interface MailOutboxTable {
  id: Id;
  message_id: string;
  kind: string;
  to_address: string;
  from_address: string | null;
  subject: string;
  text_body: string;
  html_body: string;
  headers: ColumnType<Record<string, string>, string | undefined, string>;
  raw: string | null;
  status: Generated<MailStatus>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  locked_until: NullableTimestamp;
  last_error: string | null;
  transport_response: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  sent_at: NullableTimestamp;
  /** Computed (migration 0031): updated_at once sent or failed, null while still to do. */
  finished_at: GeneratedAlways<Date | null>;
}

/** An event posted to the notification intake (migration 0017), unique per caller, scope and key. */
export interface NotificationEventsTable {
  id: Id;
  caller: string;
  project_id: number | null;
  group_id: number | null;
  event: NotificationEvent;
  target_type: NotificationTargetType;
  target_ref: number;
  target_title: string;
  target_url: string;
  author_id: number | null;
  summary: string | null;
  idempotency_key: string;
  request_digest: string;
  recipient_count: Generated<number>;
  created_at: Timestamp;
}

export type NotificationTargetType = 'issue' | 'merge_request' | 'pipeline' | 'release' | 'project';

/** Who an event e-mailed, why (the engine's reason) and which outbox message carries it. */
export interface NotificationEventRecipientsTable {
  event_id: number;
  user_id: number;
  reason: string;
  mail_id: number | null;
}

/** Back-channel logout tokens to POST (migration 0019), drained like the mail outbox. */
export interface BackchannelLogoutDeliveriesTable {
  id: Id;
  jti: Generated<string>;
  application_id: number;
  client_id: string;
  uri: string;
  sub: string;
  sid: string;
  reason: string;
  status: Generated<MailStatus>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  locked_until: NullableTimestamp;
  last_error: string | null;
  response_status: number | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  sent_at: NullableTimestamp;
}

/** An address no e-mail goes to (hard bounce or complaint) until someone clears it (migration 0018). */
export interface MailSuppressionsTable {
  id: Id;
  /** Lower-cased addr-spec. */
  address: string;
  reason: 'bounce' | 'complaint';
  detail: Generated<string>;
  /** Who reported it: `smtp`, `ses`, `cli:<user>`… */
  source: string;
  created_at: Timestamp;
  cleared_at: NullableTimestamp;
  cleared_by: string | null;
}

/** At most one live forgotten-password token per user: its SHA-256 digest and expiry. */
export interface PasswordResetTokensTable {
  user_id: number;
  token_digest: string;
  expires_at: Date;
  created_at: Timestamp;
}

export interface Database {
  users: UsersTable;
  user_emails: UserEmailsTable;
  personal_access_tokens: PersonalAccessTokensTable;
  oauth_applications: OAuthApplicationsTable;
  oauth_authorization_codes: OAuthAuthorizationCodesTable;
  oauth_access_tokens: OAuthAccessTokensTable;
  oauth_device_grants: OAuthDeviceGrantsTable;
  groups: GroupsTable;
  projects: ProjectsTable;
  members: MembersTable;
  notification_settings: NotificationSettingsTable;
  web_sessions: WebSessionsTable;
  rate_limit_counters: RateLimitCountersTable;
  audit_events: AuditEventsTable;
  user_recovery_codes: UserRecoveryCodesTable;
  webauthn_credentials: WebauthnCredentialsTable;
  webauthn_challenges: WebauthnChallengesTable;
  mail_outbox: MailOutboxTable;
  notification_events: NotificationEventsTable;
  notification_event_recipients: NotificationEventRecipientsTable;
  password_reset_tokens: PasswordResetTokensTable;
  backchannel_logout_deliveries: BackchannelLogoutDeliveriesTable;
  dpop_proofs: DpopProofsTable;
  mail_suppressions: MailSuppressionsTable;
}

export type Db = Kysely<Database>;
/** A Db or a transaction: data-access functions take either, the caller owns the transaction. */
export type DbOrTrx = Kysely<Database> | Transaction<Database>;

export type User = Selectable<UsersTable>;
export type OAuthApplication = Selectable<OAuthApplicationsTable>;
export type Group = Selectable<GroupsTable>;
export type Project = Selectable<ProjectsTable>;

/** Every column, named (never selectAll): an added column does not change a prepared statement's result. */
export const GROUP_COLUMNS = [
  'id',
  'parent_id',
  'path',
  'name',
  'full_path',
  'visibility',
  'created_at',
  'updated_at',
] as const satisfies ReadonlyArray<keyof Group>;
export const PROJECT_COLUMNS = [
  'id',
  'group_id',
  'path',
  'name',
  'path_with_namespace',
  'visibility',
  'created_at',
  'updated_at',
] as const satisfies ReadonlyArray<keyof Project>;
