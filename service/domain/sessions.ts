// Server-side web sessions (web_sessions): the cookie carries a random id, the table only its
// SHA-256 digest, so a database read does not yield usable cookies. Works on Lambda (no memory).
// Expired rows are deleted by the retention job (domain/retention.ts), their one home.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx, User } from '../db/schema';
import { APPLICATION_COLUMNS, type ApplicationRecord } from './applications';
import { endSessions, type SessionEndReason } from './backchannel-logout';
import { recordAudit } from './audit';
import { notFound } from './errors';
import { type Page, windowPage } from './page';
import { rowPicker } from '../db/row-picker';
import { statementTemplates } from '../db/statement-templates';
import { withTransaction } from '../db/transaction';
import { randomHex, sha256Hex } from './secrets';
// users.ts imports this module too (deleteUserSessions): USER_COLUMNS is only read inside functions.
import { USER_COLUMNS } from './users';

/** A signed-in session lives a week (GitLab's default), an anonymous one (sign-in in progress) an hour. */
export const SIGNED_IN_SESSION_SECONDS = 7 * 24 * 3600;
export const ANONYMOUS_SESSION_SECONDS = 3600;
/** last_seen_at is written at most this often per session: one write per five minutes, not per request. */
export const LAST_SEEN_RESOLUTION_SECONDS = 300;

export interface SessionData {
  /** Where to go after signing in: one of our own paths (never an absolute URL). */
  return_to?: string;
  /** Password accepted, waiting for the TOTP step: the user and when the password was checked. */
  otp_user_id?: number;
  otp_started_at?: number;
  /**
   * The session's id for OpenID Connect (the ID token's `sid`, RP-initiated and back-channel
   * logout): random, set when someone signs in, stable for the session. Not the cookie's id, which
   * must never leave the browser and the digest.
   */
  sid?: string;
  /** When the user signed in (ms since the epoch): the ID token's auth_time, checked against max_age. */
  auth_time?: number;
  /** How the user signed in (RFC 8176, domain/authentication-methods.ts): the ID token's amr and acr. */
  amr?: string[];
  /** OpenID Connect prompt=login / max_age: show the sign-in form although someone is signed in. */
  reauthenticate?: boolean;
  /** 2FA enrolment in progress: the new TOTP secret, sealed with the session id (pages/flash.ts). */
  pending_otp?: string;
  /**
   * Password accepted for a person who must enrol TOTP first (`set-2fa on --require-enrolment`):
   * who, the address their authenticator will label the account with, and when.
   */
  enrol?: { user_id: number; username: string; email: string; started_at: number };
  /**
   * Recovery codes just generated, sealed with the session id: shown, downloadable and printable
   * until the person says they have saved them (or `until`, ms since the epoch, passes).
   */
  recovery_codes?: { sealed: string; until: number };
  /** A one-shot message for the next page (e.g. a new application secret), shown once. */
  flash?: Record<string, unknown>;
}

export interface WebSession {
  /** The plaintext id: only ever in the cookie and in memory. */
  id: string;
  userId: number | null;
  data: SessionData;
  expiresAt: Date;
  /** The signed-in user's row, read with the session in one query (absent on a session made since). */
  user?: User;
  /** When a request last used it (findSession reads it; at most LAST_SEEN_RESOLUTION_SECONDS stale). */
  lastSeenAt?: Date;
}

/** Where a sign-in came from, for the active-sessions page. */
export interface SessionClient {
  userAgent?: string;
  ipAddress?: string;
}

export async function createSession(
  db: DbOrTrx,
  userId: number | null,
  data: SessionData = {},
  client: SessionClient = {},
): Promise<WebSession> {
  const id = randomHex();
  // A signed-in session gets its OpenID Connect sid here, the one place sessions are made.
  if (userId !== null && data.sid === undefined) data = { ...data, sid: randomHex(16) };
  const lifetime = userId === null ? ANONYMOUS_SESSION_SECONDS : SIGNED_IN_SESSION_SECONDS;
  const expiresAt = new Date(Date.now() + lifetime * 1000);
  await db
    .insertInto('web_sessions')
    .values({
      id_digest: sha256Hex(id),
      user_id: userId,
      data: JSON.stringify(data),
      expires_at: expiresAt,
      user_agent: client.userAgent?.slice(0, 1000) ?? null,
      ip_address: client.ipAddress?.slice(0, 100) ?? null,
    })
    .execute();
  return { id, userId, data, expiresAt, lastSeenAt: new Date() };
}

/** A session row's columns as findSession and findApplicationAndSession read them. */
interface SessionColumns {
  session_user_id: number | null;
  session_data: unknown;
  session_expires_at: Date;
}

/** The session (and its user, when the left join found one) from a joined row. */
function sessionOf(id: string, row: SessionColumns & { [column: string]: unknown }): WebSession {
  const { session_user_id: userId, session_data: data, session_expires_at: expiresAt, ...user } = row;
  const session: WebSession = { id, userId, data: (data ?? {}) as SessionData, expiresAt };
  // The user's columns are all null when the join found no row (id is never null in a real one).
  if (userId !== null && user.id !== null && user.id !== undefined) session.user = user as unknown as User;
  return session;
}

/** A live session and (left join: one round trip for every signed-in page) its user's row. */
export async function findSession(db: DbOrTrx, id: string): Promise<WebSession | undefined> {
  const row = await db
    .selectFrom('web_sessions as s')
    .leftJoin('users as u', 'u.id', 's.user_id')
    .select(['s.user_id as session_user_id', 's.data as session_data', 's.expires_at as session_expires_at'])
    .select('s.last_seen_at as session_last_seen_at')
    .select(USER_COLUMNS.map((c) => `u.${c}` as const))
    .where('s.id_digest', '=', sha256Hex(id))
    .where('s.expires_at', '>', new Date())
    .executeTakeFirst();
  if (!row) return undefined;
  const { session_last_seen_at: lastSeenAt, ...rest } = row;
  return { ...sessionOf(id, rest), lastSeenAt };
}

let selectList: RawBuilder<unknown> | undefined;
/**
 * findApplicationAndSession's select list, written once: constant identifiers only, so the query
 * compiler has three parameters to visit per request instead of some forty references.
 */
function applicationAndSessionColumns(): RawBuilder<unknown> {
  selectList ??= sql.raw(
    [
      ...APPLICATION_COLUMNS.map((c) => `a.${c} as app_${c}`),
      's.user_id as session_user_id',
      's.data as session_data',
      's.expires_at as session_expires_at',
      ...USER_COLUMNS.map((c) => `u.${c}`),
    ].join(', '),
  );
  return selectList;
}

// Built once, bound per request and run straight on the pool (db/statement-templates.ts,
// db/hot-statements.ts): every signed-in GET /oauth/authorize sends it.
const applicationAndSession = statementTemplates<'uid' | 'sessionDigest' | 'now'>(1);

/**
 * GET /oauth/authorize's one read: the client application by uid and the live session (with its
 * user) by id, each left-joined to a one-row relation so that either may be missing. The
 * application columns are prefixed (`app_`): both tables have id, name and created_at.
 */
export async function findApplicationAndSession(
  db: DbOrTrx,
  uid: string | undefined,
  sessionId: string | undefined,
): Promise<{ application?: ApplicationRecord; session?: WebSession }> {
  const { rows } = await applicationAndSession.run<SessionColumns & { [column: string]: unknown }>(
    db,
    'read',
    { uid: uid ?? null, sessionDigest: sessionId === undefined ? null : sha256Hex(sessionId), now: new Date() },
    (slot) => sql`
      select ${applicationAndSessionColumns()}
      from (select) as one
      left join oauth_applications a on a.uid = ${slot('uid')}
      left join web_sessions s on s.id_digest = ${slot('sessionDigest')}
        and s.expires_at > ${slot('now')}
      left join users u on u.id = s.user_id
    `,
  );
  const row = rows[0];
  const found: { application?: ApplicationRecord; session?: WebSession } = {};
  if (row.app_id !== null) found.application = pickers().application(row);
  if (sessionId !== undefined && row.session_expires_at !== null) {
    const session: WebSession = {
      id: sessionId,
      userId: row.session_user_id,
      data: (row.session_data ?? {}) as SessionData,
      expiresAt: row.session_expires_at,
    };
    // The user's columns are all null when the join found no row (id is never null in a real one).
    if (row.session_user_id !== null && row.id !== null && row.id !== undefined) session.user = pickers().user(row);
    found.session = session;
  }
  return found;
}

let picked: { application: (row: object) => ApplicationRecord; user: (row: object) => User } | undefined;
/** findApplicationAndSession's two pickers (db/row-picker.ts), made on first use (USER_COLUMNS: see above). */
function pickers() {
  picked ??= {
    application: rowPicker<ApplicationRecord>(APPLICATION_COLUMNS, 'app_'),
    user: rowPicker<User>(USER_COLUMNS),
  };
  return picked;
}

export async function saveSessionData(db: DbOrTrx, session: WebSession): Promise<void> {
  await db
    .updateTable('web_sessions')
    .set({ data: JSON.stringify(session.data) })
    .where('id_digest', '=', sha256Hex(session.id))
    .execute();
}

/** Record that the session was used now, when its last_seen_at is older than the resolution. */
export async function touchSession(db: DbOrTrx, session: WebSession): Promise<void> {
  const stale = Date.now() - LAST_SEEN_RESOLUTION_SECONDS * 1000;
  if (!session.lastSeenAt || session.lastSeenAt.getTime() > stale) return;
  session.lastSeenAt = new Date();
  await db
    .updateTable('web_sessions')
    .set({ last_seen_at: session.lastSeenAt })
    .where('id_digest', '=', sha256Hex(session.id))
    .execute();
}

/** End one session by its cookie id (sign-out, end_session, a new sign-in replacing it). */
export async function deleteSession(db: DbOrTrx, id: string, reason: SessionEndReason): Promise<void> {
  await endSessions(db, sql`s.id_digest = ${sha256Hex(id)}`, reason);
}

/**
 * Sign a user out everywhere (password change or reset, block). `keepSid`: the session whose sid
 * lives on in the browser that changed the password gets no logout tokens.
 */
export async function deleteUserSessions(
  db: DbOrTrx,
  userId: number,
  reason: SessionEndReason,
  keepSid?: string,
): Promise<void> {
  await endSessions(db, sql`s.user_id = ${userId}`, reason, { keepSid });
}

/** One row of the active-sessions page and `sessions list`: its public id is the sid. */
export interface ActiveSession {
  id: string;
  user_agent: string | null;
  ip_address: string | null;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
}

const liveSessionsOf = (userId: number) => sql`user_id = ${userId} and expires_at > now() and data ? 'sid'`;

/** The user's live signed-in sessions, the most recently used first. */
export async function listUserSessions(db: DbOrTrx, userId: number): Promise<ActiveSession[]> {
  const { rows } = await sql<ActiveSession>`
    select data->>'sid' as id, user_agent, ip_address, created_at, last_seen_at, expires_at
      from web_sessions
     where ${liveSessionsOf(userId)}
     order by last_seen_at desc, created_at desc`.execute(db);
  return rows;
}

/** One page of them (the active-sessions page, 20 a page) and their total, in one statement. */
export async function listUserSessionsPage(
  db: DbOrTrx,
  userId: number,
  { limit, offset }: { limit: number; offset: number },
): Promise<Page<ActiveSession>> {
  const { rows } = await sql<ActiveSession & { total: string }>`
    select data->>'sid' as id, user_agent, ip_address, created_at, last_seen_at, expires_at, count(*) over () as total
      from web_sessions
     where ${liveSessionsOf(userId)}
     order by last_seen_at desc, created_at desc, id
     limit ${limit} offset ${offset}`.execute(db);
  return windowPage(
    rows,
    async () =>
      (await sql<{ n: string }>`select count(*) as n from web_sessions where ${liveSessionsOf(userId)}`.execute(db))
        .rows[0].n,
    offset,
  );
}

/** One live session of the user by its sid (the revoke confirm page), or undefined. */
export async function findUserSession(db: DbOrTrx, userId: number, sid: string): Promise<ActiveSession | undefined> {
  const { rows } = await sql<ActiveSession>`
    select data->>'sid' as id, user_agent, ip_address, created_at, last_seen_at, expires_at
      from web_sessions
     where ${liveSessionsOf(userId)} and data->>'sid' = ${sid}`.execute(db);
  return rows[0];
}

/** End one of the user's sessions by its sid (the sessions page, `sessions revoke`). */
export async function revokeUserSession(db: DbOrTrx, userId: number, sid: string, actor: string): Promise<void> {
  await withTransaction(db, async (trx) => {
    const n = await endSessions(trx, sql`s.user_id = ${userId} and s.data->>'sid' = ${sid}`, 'revoked');
    if (!n) throw notFound(`session "${sid}" not found`);
    await recordAudit(trx, { actor, action: 'session.revoke', targetType: 'user', targetId: userId, details: { sid } });
  });
}

/** End every session of the user but `keepSid` (the page's "Revoke all other sessions"); returns how many. */
export async function revokeOtherUserSessions(
  db: DbOrTrx,
  userId: number,
  actor: string,
  keepSid?: string,
): Promise<number> {
  return withTransaction(db, async (trx) => {
    const n = await endSessions(
      trx,
      sql`s.user_id = ${userId} and s.data->>'sid' is distinct from ${keepSid ?? null}::text`,
      'revoked',
    );
    if (n) {
      await recordAudit(trx, {
        actor,
        action: 'session.revoke',
        targetType: 'user',
        targetId: userId,
        details: { sessions: n, kept: keepSid === undefined ? 0 : 1 },
      });
    }
    return n;
  });
}
