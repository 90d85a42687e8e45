// The signed-in user of a web request, and the safe "return to" path after sign-in.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db, User } from '../../db/schema';
import { redirect } from '../../pages/layout';

export const SIGN_IN_PATH = '/users/sign_in';
export const DEFAULT_AFTER_SIGN_IN = '/profile/applications';

/** `_db` is kept for the callers: the user comes with the session's row (SessionManager.userOf). */
export async function currentUser(app: FastifyInstance, _db: Db, request: FastifyRequest): Promise<User | undefined> {
  const user = await app.sessions.userOf(await app.sessions.read(request));
  // A user blocked after signing in is signed out by this check on the next request.
  return user && user.state === 'active' ? user : undefined;
}

/** Remember where the visitor was going and send them to sign in. */
export async function requireSignIn(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
  const session = await app.sessions.ensure(request, reply);
  if (request.method === 'GET') {
    session.data.return_to = request.url;
    await app.sessions.save(session, reply);
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
