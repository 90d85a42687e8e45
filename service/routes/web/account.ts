// What every account page route shares: the signed-in user (else off to sign in), the CSRF and
// Origin checks of a POST, the current-password check of a sensitive change, the audit actor, and
// the post/redirect/get answer with a flash message.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import type { Config } from '../../config';
import type { Db, User } from '../../db/schema';
import type { WebSession } from '../../domain/sessions';
import { checkCurrentPassword } from '../../domain/sign-in';
import { CSRF_FIELD } from '../../http/session';
import { csrfRejected } from '../../pages/common';
import type { FieldError, Flash } from '../../pages/components';
import { setFlash, takeFlash } from '../../pages/flash';
import { seeOther } from '../../pages/layout';
import { currentUser, requireSignIn } from './current-user';

export interface AccountRequest {
  user: User;
  session: WebSession;
  csrf: string;
}

/**
 * A cross-site form post carries the other site's Origin: refused even with a valid token
 * (defence in depth behind SameSite=Lax and the CSRF token). No Origin, or `null` (what Chromium
 * sends for our own forms under `Referrer-Policy: no-referrer`): the token alone decides.
 */
function originAllowed(request: FastifyRequest, config: Config): boolean {
  const origin = request.headers.origin;
  if (origin === undefined || origin === 'null') return true;
  const own = [new URL(config.publicUrl).origin, `${request.protocol}://${request.host}`];
  return own.includes(origin);
}

/** The signed-in user, and for a POST a verified CSRF token and Origin; otherwise the reply is sent. */
export async function accountGuard(
  app: FastifyInstance,
  db: Db,
  config: Config,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<AccountRequest | undefined> {
  const user = await currentUser(app, db, request);
  const session = await app.sessions.read(request);
  if (!user || !session) {
    await requireSignIn(app, request, reply);
    return undefined;
  }
  if (request.method === 'POST') {
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (!originAllowed(request, config) || !(await app.sessions.verifyCsrf(session, body[CSRF_FIELD]))) {
      await csrfRejected(reply);
      return undefined;
    }
  }
  return { user, session, csrf: await app.sessions.csrfToken(session) };
}

/** `accountGuard` bound to one route plugin's app and context. */
export const accountGuardFor =
  (app: FastifyInstance, { db, config }: Pick<AppContext, 'db' | 'config'>) =>
  (request: FastifyRequest, reply: FastifyReply) =>
    accountGuard(app, db, config, request, reply);

/** How a page answers a refused current password: its status, and the flash or the field error. */
export interface PasswordRefusal {
  status: 422 | 429;
  flash?: Flash;
  errors?: FieldError[];
}

/**
 * The current password of a sensitive change (password, recovery codes, disabling 2FA), through the
 * sign-in form's per-address limit and account lock. Undefined when it is right; otherwise what the
 * page shows (a 429 also gets its Retry-After header here). Nothing is written either way but the
 * failure counters.
 */
export async function currentPasswordRefusal(
  db: Db,
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
  password: string,
  field: string,
): Promise<PasswordRefusal | undefined> {
  const checked = await checkCurrentPassword(db, user, password, request.ip);
  if (checked.ok) return undefined;
  if (checked.reason === 'rate_limited') {
    reply.header('retry-after', String(checked.retryAfter));
    return { status: 429, flash: { alert: `Too many failed attempts. Try again in ${checked.retryAfter} seconds.` } };
  }
  return { status: 422, errors: [{ field, message: 'You must provide a valid current password.' }] };
}

/** Who did it, for the audit log. */
export const auditActor = (user: Pick<User, 'username'>, request: FastifyRequest) => ({
  actor: `user:${user.username}`,
  ipAddress: request.ip,
});

/** Post/redirect/get: leave the message (and a secret to show once) and answer 303. */
export async function redirectWithFlash(
  app: FastifyInstance,
  reply: FastifyReply,
  session: WebSession,
  location: string,
  flash: Flash,
  secret?: unknown,
) {
  await setFlash(app.sessions, session, location, flash, secret);
  return seeOther(reply, location);
}

/** What the post before left for this page (`page`: the path it redirected to). */
export const pendingFlash = <S>(app: FastifyInstance, session: WebSession, page: string) =>
  takeFlash<S>(app.sessions, session, page);
