// Server-side web sessions (web_sessions): the cookie carries a random id, the table only its
// SHA-256 digest, so a database read does not yield usable cookies. Works on Lambda (no memory).
import { sql } from 'kysely';
import type { DbOrTrx, User } from '../db/schema';
import { randomHex, sha256Hex } from './secrets';
// users.ts imports this module too (deleteUserSessions): USER_COLUMNS is only read inside functions.
import { USER_COLUMNS } from './users';

/** A signed-in session lives a week (GitLab's default), an anonymous one (sign-in in progress) an hour. */
export const SIGNED_IN_SESSION_SECONDS = 7 * 24 * 3600;
export const ANONYMOUS_SESSION_SECONDS = 3600;

export interface SessionData {
  /** Where to go after signing in: one of our own paths (never an absolute URL). */
  return_to?: string;
  /** Password accepted, waiting for the TOTP step: the user and when the password was checked. */
  otp_user_id?: number;
  otp_started_at?: number;
  /** When the user signed in (ms since the epoch): the ID token's auth_time, checked against max_age. */
  auth_time?: number;
  /** OpenID Connect prompt=login / max_age: show the sign-in form although someone is signed in. */
  reauthenticate?: boolean;
  /** 2FA enrolment in progress: the new TOTP secret, sealed with the session id (pages/flash.ts). */
  pending_otp?: string;
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
}

export async function createSession(db: DbOrTrx, userId: number | null, data: SessionData = {}): Promise<WebSession> {
  const id = randomHex();
  const lifetime = userId === null ? ANONYMOUS_SESSION_SECONDS : SIGNED_IN_SESSION_SECONDS;
  const expiresAt = new Date(Date.now() + lifetime * 1000);
  await db
    .insertInto('web_sessions')
    .values({ id_digest: sha256Hex(id), user_id: userId, data: JSON.stringify(data), expires_at: expiresAt })
    .execute();
  // Opportunistic clean-up (1 in 50 creations): no cron needed on Lambda.
  if (Math.random() < 0.02) await deleteExpiredSessions(db);
  return { id, userId, data, expiresAt };
}

/** A live session and (left join: one round trip for every signed-in page) its user's row. */
export async function findSession(db: DbOrTrx, id: string): Promise<WebSession | undefined> {
  const row = await db
    .selectFrom('web_sessions as s')
    .leftJoin('users as u', 'u.id', 's.user_id')
    .select(['s.user_id as session_user_id', 's.data as session_data', 's.expires_at as session_expires_at'])
    .select(USER_COLUMNS.map((c) => `u.${c}` as const))
    .where('s.id_digest', '=', sha256Hex(id))
    .where('s.expires_at', '>', new Date())
    .executeTakeFirst();
  if (!row) return undefined;
  const { session_user_id: userId, session_data: data, session_expires_at: expiresAt, ...user } = row;
  const session: WebSession = { id, userId, data: (data ?? {}) as SessionData, expiresAt };
  // The user's columns are all null when the join found no row (id is never null in a real one).
  if (userId !== null && user.id !== null) session.user = user as User;
  return session;
}

export async function saveSessionData(db: DbOrTrx, session: WebSession): Promise<void> {
  await db
    .updateTable('web_sessions')
    .set({ data: JSON.stringify(session.data) })
    .where('id_digest', '=', sha256Hex(session.id))
    .execute();
}

export async function deleteSession(db: DbOrTrx, id: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('id_digest', '=', sha256Hex(id)).execute();
}

/** Sign a user out everywhere (password change, block). */
export async function deleteUserSessions(db: DbOrTrx, userId: number): Promise<void> {
  await db.deleteFrom('web_sessions').where('user_id', '=', userId).execute();
}

export async function deleteExpiredSessions(db: DbOrTrx): Promise<void> {
  await db.deleteFrom('web_sessions').where('expires_at', '<=', sql<Date>`now()`).execute();
}
