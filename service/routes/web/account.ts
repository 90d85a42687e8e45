// What every account page route shares: the signed-in user (else off to sign in), the CSRF check
// of a POST (its Origin check is the form routes' own: http/form-body.ts), the current-password check of a sensitive change, the audit actor, and
// the post/redirect/get answer with a flash message.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import type { Config } from '../../config';
import type { Db, User } from '../../db/schema';
import type { MailSettings } from '../../domain/mail/account-messages';
import type { WebSession } from '../../domain/sessions';
import { checkCurrentPassword } from '../../domain/sign-in';
import { CSRF_FIELD } from '../../http/session';
import { csrfRejected } from '../../pages/common';
import type { FieldError, Flash } from '../../pages/components';
import { currentUser, requireSignIn } from '../../pages/current-user';
import { setFlash, takeFlash } from '../../pages/flash';
import { CURRENT_PASSWORD_WORDS } from '../../pages/form-words';
import { seeOther } from '../../pages/layout';

export interface AccountRequest {
  user: User;
  session: WebSession;
  csrf: string;
}

/**
 * The signed-in user, and for a POST a verified CSRF token; otherwise the reply is sent. (A
 * cross-site Origin never gets here: every form route is built by formRouteOptions, whose
 * preHandler refuses it first.)
 */
export async function accountGuard(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<AccountRequest | undefined> {
  const current = await currentUser(app.sessions, request);
  if (!current) {
    await requireSignIn(app.sessions, request, reply);
    return undefined;
  }
  const { user, session } = current;
  if (request.method === 'POST') {
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (!(await app.sessions.verifyCsrf(session, body[CSRF_FIELD]))) {
      await csrfRejected(reply);
      return undefined;
    }
  }
  return { user, session, csrf: await app.sessions.csrfToken(session) };
}

/**
 * `accountGuard` bound to one route plugin's app. (`_context`: routes/web/notifications.tsx still
 * passes its context; drop the parameter when it stops, issue 21.)
 */
export const accountGuardFor =
  (app: FastifyInstance, _context?: AppContext) => (request: FastifyRequest, reply: FastifyReply) =>
    accountGuard(app, request, reply);

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
  // Nothing typed: say so, without spending a hash or counting a failure.
  if (password === '') return { status: 422, errors: [{ field, message: CURRENT_PASSWORD_WORDS.blank }] };
  const checked = await checkCurrentPassword(db, user, password, request.ip);
  if (checked.ok) return undefined;
  if (checked.reason === 'rate_limited') {
    reply.header('retry-after', String(checked.retryAfter));
    return { status: 429, flash: { alert: `Too many failed attempts. Try again in ${checked.retryAfter} seconds.` } };
  }
  return { status: 422, errors: [{ field, message: CURRENT_PASSWORD_WORDS.otherwise }] };
}

/**
 * What the account e-mails need from the configuration (links on PUBLIC_URL, MAIL_FROM), read per
 * request: tests point the public URL at the port they listen on after the app is built.
 */
export const mailSettingsOf = (config: Config): MailSettings => ({
  publicUrl: config.publicUrl,
  from: config.mail.from,
});

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

/**
 * A refused form carried to the page that shows it (post/redirect/get, so Back and reload never
 * re-post): what was typed and what was wrong, sealed in the flash like a secret, shown once.
 */
export interface RejectedForm<V> {
  rejected: { values: V; errors: FieldError[] };
}

/** Post/redirect/get for a refused form: 303 to its page, which shows the errors and the values. */
export const redirectRejected = <V>(
  app: FastifyInstance,
  reply: FastifyReply,
  session: WebSession,
  location: string,
  values: V,
  errors: FieldError[],
) => redirectWithFlash(app, reply, session, location, {}, { rejected: { values, errors } } satisfies RejectedForm<V>);

/** What the post before left for this page (`page`: the path it redirected to). */
export const pendingFlash = <S>(app: FastifyInstance, session: WebSession, page: string) =>
  takeFlash<S>(app.sessions, session, page);
