// One-click unsubscribe (RFC 8058): the signed token a notification's List-Unsubscribe URL carries,
// the two headers, and the change a POST to that URL makes (the project's level → `disabled`,
// through settings.ts, audited as the account page audits it) and its undo.
//
// Tokens are HMAC-SHA256 under the service key ring (service-keys.ts), each with its own purpose
// string, so a session, CSRF or undo signature can never pass for an unsubscribe token:
//   unsubscribe  `<userId>.<projectId>.<expires>.<mac>`               (UNSUBSCRIBE_TOKEN_SECONDS)
//   undo         `<userId>.<projectId>.<previousLevel>.<expires>.<mac>` (UNDO_TOKEN_SECONDS)
// `expires` is Unix seconds. After a key rotation the retired key keeps verifying for
// RETIRED_KEY_VERIFY_SECONDS (8 days), so links in mail sent before a rotation work for 8 more days
// (or until they expire, whichever is first): docs/unsubscribe-and-bounces.md.
import { sql } from 'kysely';
import type { DbOrTrx, NotificationLevel, User } from '../../db/schema';
import { withTransaction } from '../../db/transaction';
import type { AuditActor } from '../audit';
import { type KeyRing, signWithRing, verifyWithRing } from '../service-keys';
import { INHERIT, NOTIFICATION_LEVELS } from './levels';
import { getNotificationSettings, updateNotificationSettings } from './settings';

/** How long a List-Unsubscribe link works: 60 days after the message was written. */
const UNSUBSCRIBE_TOKEN_SECONDS = 60 * 24 * 3600;
/** How long the Undo button of the confirmation page works. */
const UNDO_TOKEN_SECONDS = 24 * 3600;
/** The path of the one-click URL, before the token. */
export const UNSUBSCRIBE_PATH = '/-/unsubscribe';

const PURPOSE = 'unsubscribe';
const UNDO_PURPOSE = 'unsubscribe-undo';
const ID = /^[1-9][0-9]{0,15}$/;
const EXPIRES = /^[1-9][0-9]{0,11}$/;
const MAC = /^[A-Za-z0-9_-]{43}$/;

const nowSeconds = (now: Date) => Math.floor(now.getTime() / 1000);

/** The unsubscribe token of one user for one project (RFC 8058 §3.1: the URI identifies both). */
export function unsubscribeToken(ring: KeyRing, userId: number, projectId: number, now = new Date()): string {
  const value = `${userId}.${projectId}.${nowSeconds(now) + UNSUBSCRIBE_TOKEN_SECONDS}`;
  return `${value}.${signWithRing(ring, PURPOSE, value)}`;
}

/**
 * The headers of a notification about `projectId` to `userId` (RFC 2369 §3.2, RFC 8058 §3.1): an
 * HTTPS URI the mail client POSTs `List-Unsubscribe=One-Click` to. Spread them into the message's
 * `headers` (notification e-mails about a project: messages.ts).
 */
export function unsubscribeHeaders(
  settings: { publicUrl: string },
  ring: KeyRing,
  userId: number,
  projectId: number,
  now = new Date(),
): { 'List-Unsubscribe': string; 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } {
  return {
    'List-Unsubscribe': `<${unsubscribeUrl(settings, ring, userId, projectId, now)}>`,
    'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
  };
}

/** The one-click URL itself (for a footer link, say). */
function unsubscribeUrl(
  settings: { publicUrl: string },
  ring: KeyRing,
  userId: number,
  projectId: number,
  now = new Date(),
): string {
  return `${settings.publicUrl}${UNSUBSCRIBE_PATH}/${unsubscribeToken(ring, userId, projectId, now)}`;
}

type Refusal = { ok: false; reason: 'invalid' | 'expired' | 'not_found' };

/** Signature first (constant time per key), then the expiry: a forged token learns nothing else. */
function openToken(
  ring: KeyRing,
  purpose: string,
  token: string,
  fields: number,
  now: Date,
): { ok: true; parts: string[] } | Refusal {
  const parts = typeof token === 'string' ? token.split('.') : [];
  if (parts.length !== fields + 2) return { ok: false, reason: 'invalid' };
  const mac = parts.pop()!;
  const expires = parts[parts.length - 1];
  if (!MAC.test(mac) || !EXPIRES.test(expires)) return { ok: false, reason: 'invalid' };
  if (!verifyWithRing(ring, purpose, parts.join('.'), mac)) return { ok: false, reason: 'invalid' };
  if (Number(expires) <= nowSeconds(now)) return { ok: false, reason: 'expired' };
  return { ok: true, parts: parts.slice(0, fields) };
}

/** What a valid token names, as the pages show it. */
export interface UnsubscribeSubject {
  user: Pick<User, 'id' | 'email' | 'username' | 'name'>;
  project: { id: number; name: string; pathWithNamespace: string };
  /** The user's own level for the project now (`global` when they never set one). */
  level: NotificationLevel;
}

async function subjectOf(
  db: DbOrTrx,
  userId: number,
  projectId: number,
): Promise<Omit<UnsubscribeSubject, 'level'> | undefined> {
  const row = await db
    .selectFrom('users')
    .innerJoin('projects', (j) => j.on('projects.id', '=', projectId))
    .select([
      'users.id as user_id',
      'users.email',
      'users.username',
      'users.name as user_name',
      'projects.id as project_id',
      'projects.name as project_name',
      'projects.path_with_namespace',
    ])
    .where('users.id', '=', userId)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    user: { id: row.user_id, email: row.email, username: row.username, name: row.user_name },
    project: { id: row.project_id, name: row.project_name, pathWithNamespace: row.path_with_namespace },
  };
}

/**
 * Read what an unsubscribe token names; changes nothing (the GET page: link scanners fetch it).
 * A forged, tampered or expired token, or one whose user or project is gone, is refused.
 */
export async function readUnsubscribeToken(
  db: DbOrTrx,
  ring: KeyRing,
  token: string,
  now = new Date(),
): Promise<({ ok: true } & UnsubscribeSubject) | Refusal> {
  const opened = openToken(ring, PURPOSE, token, 2, now);
  if (!opened.ok) return opened;
  const [userId, projectId] = opened.parts.map(Number);
  if (!ID.test(opened.parts[0]) || !ID.test(opened.parts[1])) return { ok: false, reason: 'invalid' };
  const subject = await subjectOf(db, userId, projectId);
  if (!subject) return { ok: false, reason: 'not_found' };
  const { level } = await getNotificationSettings(db, subject.user, { kind: 'project', id: projectId });
  return { ok: true, ...subject, level };
}

export interface Unsubscribed extends UnsubscribeSubject {
  ok: true;
  /** The level before (what Undo restores). */
  previousLevel: NotificationLevel;
  /**
   * The signed undo token (bound to user, project and previous level); null when the level was
   * already `disabled` (a repeated one-click, e.g. the page reloaded): nothing changed, and an undo
   * to "disabled" would only hide the level the first one-click replaced.
   */
  undoToken: string | null;
}

/**
 * RFC 8058 §3.2: the POST. Sets the user's level for the project to `disabled` through the settings
 * module, with the same `notification_settings.update` audit event the account page records
 * (actor `user:<username>`, the client address). The user's own row is locked for the read and
 * the write, so the previous level Undo restores is the one really replaced.
 */
export async function unsubscribe(
  db: DbOrTrx,
  ring: KeyRing,
  token: string,
  ipAddress: string | undefined,
  now = new Date(),
): Promise<Unsubscribed | Refusal> {
  return withTransaction(db, async (trx) => {
    const read = await readUnsubscribeToken(trx, ring, token, now);
    if (!read.ok) return read;
    const previousLevel = await lockedProjectLevel(trx, read.user.id, read.project.id);
    if (previousLevel === 'disabled') return { ...read, level: 'disabled', previousLevel, undoToken: null };
    await updateNotificationSettings(
      trx,
      read.user,
      { kind: 'project', id: read.project.id },
      { level: 'disabled', events: {} },
      actorOf(read.user, ipAddress),
    );
    return {
      ...read,
      level: 'disabled',
      previousLevel,
      undoToken: undoToken(ring, read.user.id, read.project.id, previousLevel, now),
    };
  });
}

const actorOf = (user: Pick<User, 'username'>, ipAddress: string | undefined): AuditActor => ({
  actor: `user:${user.username}`,
  ...(ipAddress ? { ipAddress } : {}),
});

/** The user's own level for the project, its row locked until the transaction ends. */
async function lockedProjectLevel(trx: DbOrTrx, userId: number, projectId: number): Promise<NotificationLevel> {
  const { rows } = await sql<{ level: NotificationLevel }>`
    select level from notification_settings where user_id = ${userId} and project_id = ${projectId} for update`.execute(
    trx,
  );
  return rows[0]?.level ?? INHERIT;
}

function undoToken(ring: KeyRing, userId: number, projectId: number, level: NotificationLevel, now: Date): string {
  const value = `${userId}.${projectId}.${level}.${nowSeconds(now) + UNDO_TOKEN_SECONDS}`;
  return `${value}.${signWithRing(ring, UNDO_PURPOSE, value)}`;
}

export type UndoResult =
  | ({ ok: true; restored: boolean } & UnsubscribeSubject)
  | { ok: false; reason: 'invalid' | 'expired' | 'not_found' };

/**
 * Undo: restore the level the unsubscribe replaced, only while the level is still `disabled`
 * (compare and set under the row lock): a stale or replayed undo never overrides a choice the
 * person made since. `restored: false` when the level had already changed.
 */
export async function undoUnsubscribe(
  db: DbOrTrx,
  ring: KeyRing,
  token: string,
  ipAddress: string | undefined,
  now = new Date(),
): Promise<UndoResult> {
  const opened = openToken(ring, UNDO_PURPOSE, token, 3, now);
  if (!opened.ok) return opened;
  const [user, project, level] = opened.parts;
  if (!ID.test(user) || !ID.test(project) || !(NOTIFICATION_LEVELS as readonly string[]).includes(level))
    return { ok: false, reason: 'invalid' };
  return withTransaction(db, async (trx) => {
    const subject = await subjectOf(trx, Number(user), Number(project));
    if (!subject) return { ok: false, reason: 'not_found' } as const;
    const current = await lockedProjectLevel(trx, subject.user.id, subject.project.id);
    if (current !== 'disabled') return { ok: true, restored: false, ...subject, level: current };
    await updateNotificationSettings(
      trx,
      subject.user,
      { kind: 'project', id: subject.project.id },
      { level: level as NotificationLevel, events: {} },
      actorOf(subject.user, ipAddress),
    );
    return { ok: true, restored: true, ...subject, level: level as NotificationLevel };
  });
}
