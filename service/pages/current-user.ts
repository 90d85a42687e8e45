// Who is signed in on a page request, for both page surfaces (routes/web and routes/oauth): the
// one signed-in-and-active check, where sign-in lives, and the safe "return to" path after it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../db/schema';
import type { WebSession } from '../domain/sessions';
import type { SessionManager } from '../http/session';
import { redirect } from './layout';

export const SIGN_IN_PATH = '/users/sign_in';
/** The account overview: where signing in leads when nothing else asked for it. */
export const DEFAULT_AFTER_SIGN_IN = '/-/profile';

export interface SignedIn {
  session: WebSession;
  user: User;
}

/**
 * The session and its user, if that user may act: signed in and active. A user blocked after
 * signing in is signed out by this check on their next request. The user comes with the session's
 * row (SessionManager.userOf): no query of its own.
 */
export async function signedInWith(
  sessions: SessionManager,
  session: WebSession | undefined,
): Promise<SignedIn | undefined> {
  const user = await sessions.userOf(session);
  return session && user?.state === 'active' ? { session, user } : undefined;
}

/**
 * How the session's user signed in, for an ID token: when (the session's record, else — sessions
 * from before it was kept — the user's latest sign-in) and with what (RFC 8176 amr, when recorded).
 */
export function signInOf({ session, user }: SignedIn): { authTime: Date | undefined; amr: string[] | undefined } {
  const authTime =
    session.data.auth_time !== undefined ? new Date(session.data.auth_time) : (user.current_sign_in_at ?? undefined);
  return { authTime, amr: session.data.amr };
}

/** The request's signed-in, active user and their session (see signedInWith). */
export async function currentUser(sessions: SessionManager, request: FastifyRequest): Promise<SignedIn | undefined> {
  return signedInWith(sessions, await sessions.read(request));
}

/**
 * Send the visitor to sign in; on a GET, remember where they were going (`returnTo`, by default
 * this URL: our own path and query) and, when they are signed in but must sign in again
 * (prompt=login, max_age), that the form is to be shown to them anyway.
 */
export async function requireSignIn(
  sessions: SessionManager,
  request: FastifyRequest,
  reply: FastifyReply,
  { returnTo = request.url, reauthenticate = false }: { returnTo?: string; reauthenticate?: boolean } = {},
) {
  if (request.method === 'GET') {
    const session = await sessions.ensure(request, reply);
    session.data.return_to = returnTo;
    if (reauthenticate) session.data.reauthenticate = true;
    await sessions.save(session, reply);
  }
  return redirect(reply, SIGN_IN_PATH);
}

const hasControlOrBackslash = (s: string): boolean =>
  [...s].some((c) => c.charCodeAt(0) <= 0x1f || c.charCodeAt(0) === 0x7f || c === '\\');

/**
 * Only our own absolute paths: "/x", never "//host", "/\host" (browsers read both as another
 * host), a scheme, or control characters. No open redirect through the sign-in form.
 */
export function safeReturnTo(path: unknown): string | undefined {
  if (typeof path !== 'string' || !path.startsWith('/') || path.length > 4096) return undefined;
  // A control character (U+0000–U+001F, U+007F) or a backslash anywhere: browsers strip or fold them.
  if (/^\/[\\/]/.test(path) || hasControlOrBackslash(path)) return undefined;
  try {
    const base = 'http://lanyard.invalid';
    const u = new URL(path, base);
    return u.origin === base ? path : undefined;
  } catch {
    return undefined;
  }
}
