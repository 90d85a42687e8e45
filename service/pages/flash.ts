// One-time messages carried across a post/redirect/get in the web session. A secret to show once
// (a new token, recovery codes) is sealed with a key derived from the session id: the cookie holds
// the id, the database only its digest, so the stored flash is unreadable from a database copy.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { WebSession } from '../domain/sessions';
import type { SessionManager } from '../http/session';
import type { Flash } from './components';

interface StoredFlash extends Flash {
  /** AES-256-GCM: iv.tag.ciphertext, base64url. */
  sealed?: string;
  /** The page it is for (the redirect's target): only that page takes it. */
  page?: string;
}

const keyFor = (session: WebSession) => createHash('sha256').update(`lanyard-flash\0${session.id}`).digest();

/** Encrypt a value so only a request carrying this session's cookie can read it back. */
export function seal(session: WebSession, value: unknown): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(session), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((b) => b.toString('base64url')).join('.');
}

export function unseal(session: WebSession, sealed: string): unknown {
  try {
    const [iv, tag, body] = sealed.split('.').map((p) => Buffer.from(p, 'base64url'));
    const decipher = createDecipheriv('aes-256-gcm', keyFor(session), iv);
    decipher.setAuthTag(tag);
    return JSON.parse(Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Leave a message (and optionally a secret to reveal once) for `page`, the page the post redirects
 * to. Bound to it (issue 22): another page loaded first in between (a second tab, a prefetch) must
 * not consume a token shown once, nor render another page's secret (recovery codes are not an
 * application secret).
 * An anonymous session (the forgotten-password pages) lives in its cookie: pass the reply.
 */
export async function setFlash(
  sessions: SessionManager,
  session: WebSession,
  page: string,
  flash: Flash,
  secret?: unknown,
  reply?: FastifyReply,
): Promise<void> {
  const stored: StoredFlash = { ...flash, page };
  if (secret !== undefined) stored.sealed = seal(session, secret);
  session.data.flash = stored as Record<string, unknown>;
  await sessions.save(session, reply);
}

/**
 * The pending message and secret for `page`, removed from the session: shown once, gone on reload.
 * A flash left for another page stays where it is, for that page.
 */
export async function takeFlash<S = unknown>(
  sessions: SessionManager,
  session: WebSession,
  page: string,
  reply?: FastifyReply,
): Promise<{ flash?: Flash; secret?: S }> {
  const stored = session.data.flash as StoredFlash | undefined;
  if (!stored) return {};
  if (typeof stored.page === 'string' && stored.page !== page) return {};
  delete session.data.flash;
  await sessions.save(session, reply);
  const flash: Flash = {};
  if (typeof stored.notice === 'string') flash.notice = stored.notice;
  if (typeof stored.alert === 'string') flash.alert = stored.alert;
  const secret = typeof stored.sealed === 'string' ? (unseal(session, stored.sealed) as S) : undefined;
  return { flash, secret };
}
