// OAuth applications: registration, update, listing, deletion and secret rotation, for the CLI,
// the pages and the API alike (one set of rules, one audit trail). The secret is returned once at
// creation/rotation and stored only as a SHA-256 digest.
import { type ExpressionBuilder, sql } from 'kysely';
import { rowPicker } from '../db/row-picker';
import { type SlotOf, statementTemplates } from '../db/statement-templates';
import { withTransaction } from '../db/transaction';
import type { Database, DbOrTrx, OAuthApplication } from '../db/schema';
import { recordAudit } from './audit';
import { DomainError, invalid, notFound } from './errors';
import { requireName } from './names';
import { type Page, windowPage } from './page';
import {
  addressLimit,
  type CheckedAttemptColumns,
  checkedAttempt,
  checkedAttemptThrottle,
  type Throttle,
  unwrittenAdmission,
} from './rate-limit';
import { requireBackchannelLogoutUri, requirePostLogoutRedirectUris, requireRedirectUris } from './redirect-uris';
import { requireAllowedResources } from './resources';
import { API_SCOPES, requireScopes, sortScopes } from './scopes';
import { newApplicationSecret, randomHex, safeEqual, sha256Hex } from './secrets';

/**
 * Whose applications an operation may touch: undefined, any; a user id, that user's (the pages);
 * null, the instance-wide ones, owned by no one (GitLab's Applications API manages only those).
 */
export type ApplicationOwner = number | null | undefined;

/** The owner condition of ApplicationOwner, for `.where(…)`. */
const ownerIs = (ownerId: number | null) => (eb: ExpressionBuilder<Database, 'oauth_applications'>) =>
  ownerId === null ? eb('owner_id', 'is', null) : eb('owner_id', '=', ownerId);

/** GitLab's (Doorkeeper's) field error for scopes the server does not offer. */
const SCOPES_NOT_CONFIGURED = "doesn't match those configured on the server.";

/** The application scopes asked for, or a 400-class error carrying GitLab's field error. */
function applicationScopes(text: string | string[]): string[] {
  try {
    return requireScopes(text);
  } catch (err) {
    if (err instanceof DomainError) throw invalid(err.message, { scopes: [SCOPES_NOT_CONFIGURED] });
    throw err;
  }
}

export interface RegisterApplicationInput {
  name: string;
  redirectUris: string[];
  /** RP-Initiated Logout 1.0: where end_session may send the person back (none by default). */
  postLogoutRedirectUris?: string[];
  /** Back-Channel Logout 1.0: where logout tokens are POSTed (none by default). */
  backchannelLogoutUri?: string | null;
  backchannelLogoutSessionRequired?: boolean;
  scopes?: string | string[];
  confidential?: boolean;
  trusted?: boolean;
  /** RFC 9449 §5.2 `dpop_bound_access_tokens`: every token request must carry a DPoP proof. */
  dpopBoundAccessTokens?: boolean;
  ownerId?: number | null;
  /** RFC 8707: the resources its tokens may be for; null/absent = any https or loopback URI. */
  allowedResources?: string[] | null;
  /** RFC 7591: a dynamically registered client's RFC 7592 token (stored as its SHA-256 digest). */
  registrationAccessToken?: string;
  actor?: string;
  ipAddress?: string;
}

/** Columns safe to select: everything but the secret digest. */
const PUBLIC_COLUMNS = [
  'id',
  'uid',
  'name',
  'redirect_uris',
  'post_logout_redirect_uris',
  'backchannel_logout_uri',
  'backchannel_logout_session_required',
  'scopes',
  'confidential',
  'trusted',
  'dpop_bound_access_tokens',
  'owner_id',
  'allowed_resources',
  'dynamically_registered',
  'created_at',
  'updated_at',
] as const;
export type ApplicationRecord = Omit<OAuthApplication, 'secret_digest' | 'registration_access_token_digest'>;
/** The same, for readers joining applications to other tables (GET /oauth/authorize's one read). */
export const APPLICATION_COLUMNS = PUBLIC_COLUMNS;
const SECRET_COLUMNS = [...PUBLIC_COLUMNS, 'secret_digest'] as const;
type Nullable<T> = { [K in keyof T]: T[K] | null };

export async function registerApplication(
  db: DbOrTrx,
  input: RegisterApplicationInput,
): Promise<{ application: ApplicationRecord; secret: string }> {
  return withTransaction(db, async (db) => {
    const name = requireName(input.name);
    const redirectUris = requireRedirectUris(input.redirectUris);
    const postLogoutRedirectUris = requirePostLogoutRedirectUris(input.postLogoutRedirectUris ?? []);
    const backchannelLogoutUri = requireBackchannelLogoutUri(input.backchannelLogoutUri ?? null);
    const backchannelLogoutSessionRequired = input.backchannelLogoutSessionRequired ?? false;
    // No scopes given: the API scopes, as before OpenID Connect (an app opts into openid explicitly).
    const scopes = input.scopes === undefined ? [...API_SCOPES] : applicationScopes(input.scopes);
    const allowedResources = requireAllowedResources(input.allowedResources);
    const secret = newApplicationSecret();
    const application = await db
      .insertInto('oauth_applications')
      .values({
        uid: randomHex(),
        secret_digest: sha256Hex(secret),
        name,
        redirect_uris: redirectUris,
        post_logout_redirect_uris: postLogoutRedirectUris,
        backchannel_logout_uri: backchannelLogoutUri,
        backchannel_logout_session_required: backchannelLogoutSessionRequired,
        scopes: sortScopes(scopes),
        confidential: input.confidential ?? true,
        trusted: input.trusted ?? false,
        dpop_bound_access_tokens: input.dpopBoundAccessTokens ?? false,
        owner_id: input.ownerId ?? null,
        allowed_resources: allowedResources,
        dynamically_registered: input.registrationAccessToken !== undefined,
        registration_access_token_digest:
          input.registrationAccessToken === undefined ? null : sha256Hex(input.registrationAccessToken),
      })
      .returning(PUBLIC_COLUMNS)
      .executeTakeFirstOrThrow();
    await recordAudit(db, {
      actor: input.actor ?? 'system',
      action: 'application.register',
      targetType: 'application',
      targetId: application.uid,
      ipAddress: input.ipAddress,
      details: {
        name,
        redirect_uris: redirectUris,
        post_logout_redirect_uris: postLogoutRedirectUris,
        backchannel_logout_uri: backchannelLogoutUri,
        backchannel_logout_session_required: backchannelLogoutSessionRequired,
        scopes,
        confidential: application.confidential,
        trusted: application.trusted,
        ...(application.dpop_bound_access_tokens ? { dpop_bound_access_tokens: true } : {}),
        ...(allowedResources ? { allowed_resources: allowedResources } : {}),
        ...(application.dynamically_registered ? { dynamically_registered: true } : {}),
      },
    });
    return { application, secret };
  });
}

export const findApplicationByUid = (db: DbOrTrx, uid: string): Promise<ApplicationRecord | undefined> =>
  db.selectFrom('oauth_applications').select(PUBLIC_COLUMNS).where('uid', '=', uid).executeTakeFirst();

export const findApplicationById = (db: DbOrTrx, id: number): Promise<ApplicationRecord | undefined> =>
  db.selectFrom('oauth_applications').select(PUBLIC_COLUMNS).where('id', '=', id).executeTakeFirst();

/** An application by its numeric id (what `apps list` prints first) or its App ID (uid, 64 hex
 *  digits): the id is all digits and short, a uid never is. */
export async function getApplicationByIdOrUid(db: DbOrTrx, ref: string): Promise<ApplicationRecord> {
  const app = /^[1-9]\d{0,15}$/.test(ref)
    ? await findApplicationById(db, Number(ref))
    : await findApplicationByUid(db, ref);
  if (!app) throw notFound(`application "${ref}" not found`);
  return app;
}

export const listApplications = (db: DbOrTrx, ownerId?: ApplicationOwner): Promise<ApplicationRecord[]> =>
  db
    .selectFrom('oauth_applications')
    .select(PUBLIC_COLUMNS)
    .$if(ownerId !== undefined, (q) => q.where(ownerIs(ownerId as number | null)))
    .orderBy('id')
    .execute();

/** One page of a person's own applications (the applications page), newest first, with the total. */
export async function listOwnApplicationsPage(
  db: DbOrTrx,
  ownerId: number,
  { limit, offset }: { limit: number; offset: number },
): Promise<Page<ApplicationRecord>> {
  const mine = db.selectFrom('oauth_applications').where('owner_id', '=', ownerId);
  const rows = await mine
    .select([...PUBLIC_COLUMNS, sql<string>`count(*) over ()`.as('total')])
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
  return windowPage(
    rows,
    async () => (await mine.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n,
  );
}

/**
 * Who registered an application, as the consent page names them; undefined when no person owns
 * it (registered by the administrator, from the CLI or the Applications API).
 */
export const findApplicationOwner = async (
  db: DbOrTrx,
  application: Pick<ApplicationRecord, 'owner_id'>,
): Promise<{ username: string; name: string } | undefined> =>
  application.owner_id === null
    ? undefined
    : db.selectFrom('users').select(['username', 'name']).where('id', '=', application.owner_id).executeTakeFirst();

export interface UpdateApplicationInput {
  name?: string;
  redirectUris?: string[];
  postLogoutRedirectUris?: string[];
  /** Empty or null removes it. */
  backchannelLogoutUri?: string | null;
  backchannelLogoutSessionRequired?: boolean;
  scopes?: string | string[];
  confidential?: boolean;
  dpopBoundAccessTokens?: boolean;
  /** null clears the list (any resource); undefined leaves it. */
  allowedResources?: string[] | null;
}

/**
 * Change an application in place: its App ID (uid), secret and tokens stay. Every field is checked
 * before anything is written; what changed is audited. Tokens already issued keep their scopes
 * until they expire (as in GitLab, whose applications form edits the same way).
 */
export async function updateApplication(
  db: DbOrTrx,
  uid: string,
  input: UpdateApplicationInput,
  actor = 'system',
  ownerId?: ApplicationOwner,
): Promise<ApplicationRecord> {
  const changes: Partial<
    Pick<
      OAuthApplication,
      | 'name'
      | 'redirect_uris'
      | 'post_logout_redirect_uris'
      | 'backchannel_logout_uri'
      | 'backchannel_logout_session_required'
      | 'scopes'
      | 'confidential'
      | 'dpop_bound_access_tokens'
      | 'allowed_resources'
    >
  > = {};
  if (input.name !== undefined) changes.name = requireName(input.name);
  if (input.redirectUris !== undefined) changes.redirect_uris = requireRedirectUris(input.redirectUris);
  if (input.postLogoutRedirectUris !== undefined)
    changes.post_logout_redirect_uris = requirePostLogoutRedirectUris(input.postLogoutRedirectUris);
  if (input.backchannelLogoutUri !== undefined)
    changes.backchannel_logout_uri = requireBackchannelLogoutUri(input.backchannelLogoutUri);
  if (input.backchannelLogoutSessionRequired !== undefined)
    changes.backchannel_logout_session_required = input.backchannelLogoutSessionRequired;
  if (input.scopes !== undefined) changes.scopes = sortScopes(applicationScopes(input.scopes));
  if (input.confidential !== undefined) changes.confidential = input.confidential;
  if (input.dpopBoundAccessTokens !== undefined) changes.dpop_bound_access_tokens = input.dpopBoundAccessTokens;
  if (input.allowedResources !== undefined) changes.allowed_resources = requireAllowedResources(input.allowedResources);
  return withTransaction(db, async (db) => {
    const q = db
      .updateTable('oauth_applications')
      .set({ ...changes, updated_at: new Date() })
      .where('uid', '=', uid);
    const application = await q
      .$if(ownerId !== undefined, (q) => q.where(ownerIs(ownerId as number | null)))
      .returning(PUBLIC_COLUMNS)
      .executeTakeFirst();
    if (!application) throw notFound(`application "${uid}" not found`);
    await recordAudit(db, {
      actor,
      action: 'application.update',
      targetType: 'application',
      targetId: uid,
      details: changes,
    });
    return application;
  });
}

/** Deleting an application revokes everything issued to it (cascade). */
export async function deleteApplication(
  db: DbOrTrx,
  uid: string,
  actor = 'system',
  ownerId?: ApplicationOwner,
): Promise<ApplicationRecord> {
  return withTransaction(db, async (db) => {
    const q = db.deleteFrom('oauth_applications').where('uid', '=', uid);
    const deleted = await q
      .$if(ownerId !== undefined, (q) => q.where(ownerIs(ownerId as number | null)))
      .returning(PUBLIC_COLUMNS)
      .executeTakeFirst();
    if (!deleted) throw notFound(`application "${uid}" not found`);
    await recordAudit(db, { actor, action: 'application.delete', targetType: 'application', targetId: uid });
    return deleted;
  });
}

/** A new secret; the old one stops working at once. */
export async function rotateApplicationSecret(
  db: DbOrTrx,
  uid: string,
  actor = 'system',
  ownerId?: ApplicationOwner,
): Promise<{ application: ApplicationRecord; secret: string }> {
  return withTransaction(db, async (db) => {
    const secret = newApplicationSecret();
    const q = db
      .updateTable('oauth_applications')
      .set({ secret_digest: sha256Hex(secret), updated_at: new Date() })
      .where('uid', '=', uid);
    const application = await q
      .$if(ownerId !== undefined, (q) => q.where(ownerIs(ownerId as number | null)))
      .returning(PUBLIC_COLUMNS)
      .executeTakeFirst();
    if (!application) throw notFound(`application "${uid}" not found`);
    await recordAudit(db, { actor, action: 'application.rotate_secret', targetType: 'application', targetId: uid });
    return { application, secret };
  });
}

export type SecretCheck =
  | { ok: true; application: ApplicationRecord }
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'rate_limited'; throttle: Throttle };

type SecretCheckRow = Nullable<OAuthApplication> & CheckedAttemptColumns;

/** The slots of the secret check's fragment (secretCheckCtes), bound by secretCheckValues. */
export type SecretCheckSlot = 'uid' | 'digest' | 'key' | 'limit' | 'windowSeconds';
/** The secret check of one request: the client id, its secret's digest and the address's limit. */
export type SecretCheckValues = Record<SecretCheckSlot, unknown> & { digest: string; limit: number };

export function secretCheckValues(input: { uid: string; secret: string; address: string }): SecretCheckValues {
  const limit = addressLimit(input.address);
  // Named, not spread (db/row-picker.ts on Node 20's cost of copying properties).
  return {
    uid: input.uid,
    digest: sha256Hex(input.secret),
    key: limit.key,
    limit: limit.limit,
    windowSeconds: limit.windowSeconds,
  };
}

/**
 * Client authentication with a secret, throttled per client address, as CTEs a statement starts
 * with; its answer is the one row of `client_check` (CLIENT_CHECK_COLUMNS, read by
 * secretCheckOf). It reads the application, compares the secret's digest and counts a failure on
 * the address's counter — admitted only while the address is under its limit (rate-limit.ts), so
 * a throttled address learns nothing, right secret or wrong, and 50 concurrent guesses are no more
 * than the limit. The database compares SHA-256 digests of random secrets: its timing reveals
 * nothing about the secret. An unknown client counts as a failure too. A statement that also
 * spends a grant (the refresh rotation) spends it only when `client_check` says so.
 */
export function secretCheckCtes(slot: SlotOf<SecretCheckSlot>) {
  const attempt = checkedAttempt(
    { key: slot('key'), limit: slot('limit'), windowSeconds: slot('windowSeconds') },
    sql<boolean>`not exists (select from app where app.secret_digest = ${slot('digest')})`,
  );
  // From a one-row relation, so an unknown client_id still reads the address's counter.
  return sql`
    app as (select ${sql.join(SECRET_COLUMNS.map((c) => sql.ref(c)))} from oauth_applications where uid = ${slot('uid')}),
    ${attempt.cte},
    client_check as materialized (
      select ${sql.join(SECRET_COLUMNS.map((c) => sql.ref(`a.${c}`)))}, ${attempt.columns}
      from (select) as one
      left join app a on true
    )`;
}

/**
 * secretCheckCtes without the failure count, for the first try of a statement that spends a grant:
 * `client_check` admits a right secret from an address with no counter (unwrittenAdmission) and
 * leaves every other case undecided (admitted false, failures and window_remaining null); the
 * caller then runs the statement again with secretCheckCtes (secretCheckDecided says which). A
 * right secret from a quiet address costs one statement without the counter's insert; a wrong one,
 * or one from an address with failures in its window, costs two.
 */
export function quickSecretCheckCtes(slot: SlotOf<SecretCheckSlot>) {
  const right = sql<boolean>`a.secret_digest = ${slot('digest')}`;
  return sql`
    app as (select ${sql.join(SECRET_COLUMNS.map((c) => sql.ref(c)))} from oauth_applications where uid = ${slot('uid')}),
    client_check as materialized (
      select ${sql.join(SECRET_COLUMNS.map((c) => sql.ref(`a.${c}`)))},
        coalesce(${unwrittenAdmission({ key: slot('key') }, right)}, false) as admitted,
        null::integer as failures, null::numeric as window_remaining
      from (select) as one
      left join app a on true
    )`;
}

/** A grant statement's two tries with a secret: the quick check, then (undecided) the counting one. */
export type SecretCheckTry = 'quick-secret' | 'with-secret';
/** The CTEs of a secret check's try (quickSecretCheckCtes or secretCheckCtes). */
export const secretCheckCtesOf = (slot: SlotOf<SecretCheckSlot>, attempt: SecretCheckTry) =>
  attempt === 'quick-secret' ? quickSecretCheckCtes(slot) : secretCheckCtes(slot);

/** Whether a quickSecretCheckCtes statement decided (admitted); false: run it with secretCheckCtes. */
export const secretCheckDecided = (row: Pick<SecretCheckRow, 'admitted'> | undefined): boolean =>
  row?.admitted === true;

/** The attempt's columns: whether it was admitted and what its window holds. */
const ATTEMPT_COLUMNS = ['admitted', 'failures', 'window_remaining'] as const;
/** What `client_check` holds: the application's columns, its secret's digest and the attempt's. */
const CLIENT_CHECK_COLUMNS = [...SECRET_COLUMNS, ...ATTEMPT_COLUMNS] as const;
/** Of those, what decides the check and names the client (clientIdCheckOf). */
const CLIENT_ID_CHECK_COLUMNS = ['id', 'secret_digest', ...ATTEMPT_COLUMNS] as const;

/** client_check's columns as a grant statement returns them beside its own: `client_` + name. */
const prefixedCheckColumns = (columns: readonly string[]) =>
  sql`${sql.join(columns.map((col) => sql`cc.${sql.ref(col)} as ${sql.ref(`client_${col}`)}`))}`;

/** The secret check's slots for a statement shape without it (that shape binds no such slot). */
export const NO_SECRET_CHECK: Record<SecretCheckSlot, null> = {
  uid: null,
  digest: null,
  key: null,
  limit: null,
  windowSeconds: null,
};

/**
 * What a grant's statement reads from `client_check` (secretCheckCtes), one home for each:
 * the client's id when the attempt was admitted and the secret matched (else null: nothing is
 * spent), whether the client requires DPoP, its row as `client_` columns beside the statement's
 * own (read back by unprefixedClientCheck), and the FROM that puts client_check first as `cc`, so
 * an unknown client_id still answers one row.
 */
export const clientCheckSql = {
  authenticatedId: (slot: SlotOf<SecretCheckSlot>) =>
    sql`(select cc.id from client_check cc where cc.admitted and cc.secret_digest = ${slot('digest')})`,
  dpopRequired: sql`coalesce((select cc.dpop_bound_access_tokens from client_check cc), false)`,
  columns: prefixedCheckColumns(CLIENT_CHECK_COLUMNS),
  idColumns: prefixedCheckColumns(CLIENT_ID_CHECK_COLUMNS),
  from: (rest: string) => sql`from client_check cc left join ${sql.raw(rest)} on true`,
};

/** client_check's columns as a statement returned them beside its own (`client_` + name). */
export const unprefixedClientCheck = rowPicker<SecretCheckRow>(CLIENT_CHECK_COLUMNS, 'client_');
/** The same for clientCheckSql.idColumns. */
export const unprefixedClientIdCheck = rowPicker<ClientIdCheckRow>(CLIENT_ID_CHECK_COLUMNS, 'client_');

/** The application of a secret check's row: its public columns (no digest, no attempt's). */
const applicationOfCheck = rowPicker<ApplicationRecord>(PUBLIC_COLUMNS);

/** The secret check's answer, from the row of `client_check`. */
export function secretCheckOf(values: SecretCheckValues, row: SecretCheckRow): SecretCheck {
  const check = clientIdCheckOf(values, row);
  return check.ok ? { ok: true, application: applicationOfCheck(row) } : check;
}

/** client_check's columns that decide the check and name the client (CLIENT_ID_CHECK_COLUMNS). */
type ClientIdCheckRow = Pick<SecretCheckRow, (typeof CLIENT_ID_CHECK_COLUMNS)[number]>;
export type ClientIdCheck = { ok: true; applicationId: number } | Exclude<SecretCheck, { ok: true }>;

/**
 * secretCheckOf for a statement that needs only the client's id (the refresh rotation): it returns
 * clientCheckSql.idColumns, not the application's every column (four arrays and two timestamps
 * PostgreSQL formats and pg parses per request), read back with unprefixedClientIdCheck.
 */
export function clientIdCheckOf(values: SecretCheckValues, row: ClientIdCheckRow): ClientIdCheck {
  const throttle = checkedAttemptThrottle(
    { key: values.key as string, limit: values.limit, windowSeconds: values.windowSeconds as number },
    row,
  );
  if (throttle) return { ok: false, reason: 'rate_limited', throttle };
  // The statement decided; the constant-time compare agrees with it (and with digest-less rows).
  const ok = safeEqual(row.secret_digest ?? '0'.repeat(64), values.digest);
  if (row.id === null || !ok) return { ok: false, reason: 'invalid' };
  return { ok: true, applicationId: row.id };
}

// Built and compiled once (db/statement-templates.ts): building it cost more than a third of the
// token endpoint's own CPU per request (bench/http.ts, refresh grant). Every value is a slot, the
// address limit's too, so each call binds its own.
const secretChecks = statementTemplates<SecretCheckSlot>(1);

/** Client authentication with a secret, throttled per client address, in one statement (secretCheckCtes). */
export async function checkApplicationSecret(
  db: DbOrTrx,
  input: { uid: string; secret: string; address: string },
): Promise<SecretCheck> {
  const values = secretCheckValues(input);
  const { rows } = await secretChecks.run<SecretCheckRow>(
    db,
    'check',
    values,
    (slot) =>
      sql<SecretCheckRow>`with ${secretCheckCtes(slot)} select ${sql.join(CLIENT_CHECK_COLUMNS.map((c) => sql.ref(c)))} from client_check`,
  );
  return secretCheckOf(values, rows[0]);
}

/** The operator/JSON view of an application (never the secret). */
export function applicationSummary(app: ApplicationRecord) {
  return {
    id: app.id,
    application_id: app.uid,
    application_name: app.name,
    callback_url: app.redirect_uris.join('\n'),
    redirect_uris: app.redirect_uris,
    post_logout_redirect_uris: app.post_logout_redirect_uris,
    backchannel_logout_uri: app.backchannel_logout_uri,
    backchannel_logout_session_required: app.backchannel_logout_session_required,
    scopes: app.scopes,
    confidential: app.confidential,
    trusted: app.trusted,
    dpop_bound_access_tokens: app.dpop_bound_access_tokens,
    owner_id: app.owner_id,
    allowed_resources: app.allowed_resources,
    dynamically_registered: app.dynamically_registered,
    created_at: app.created_at.toISOString(),
  };
}
