// /users/sign_in (password, then a TOTP step for users with 2FA) and /users/sign_out.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import { checkOtp, checkPassword, recordSignIn, type CredentialResult } from '../../domain/sign-in';
import type { WebSession } from '../../domain/sessions';
import { twoFactorEnabled } from '../../domain/users';
import { stringParam } from '../../shared/params';
import { formRouteOptions } from '../../http/form-body';
import { CSRF_FIELD } from '../../http/session';
import { csrfField, csrfRejected, html, redirect, sendPage, type SafeHtml } from '../../pages/html';
import { currentUser, DEFAULT_AFTER_SIGN_IN, safeReturnTo, SIGN_IN_PATH } from './current-user';

/** How long the TOTP step may follow the password step. */
const OTP_STEP_SECONDS = 300;
const INVALID_LOGIN = 'Invalid login or password.';
const INVALID_OTP = 'Invalid two-factor code.';

/** The password step's fields, or the TOTP step's. */
const SIGN_IN_FORM = formRouteOptions({ strings: ['user[login]', 'user[password]', 'user[otp_attempt]'] });
const SIGN_OUT_FORM = formRouteOptions({ strings: [] });

export async function signInRoutes(app: FastifyInstance, { db }: AppContext) {
  const sessions = app.sessions;

  async function passwordForm(reply: FastifyReply, session: WebSession, status = 200, error?: string, login = '') {
    return sendPage(
      reply,
      status,
      'Sign in',
      html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="${SIGN_IN_PATH}">
${csrfField(await sessions.csrfToken(session))}
<label for="user_login">Username or primary email</label>
<input type="text" id="user_login" name="user[login]" value="${login}" autocomplete="username" required autofocus>
<label for="user_password">Password</label>
<input type="password" id="user_password" name="user[password]" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
    );
  }

  async function otpForm(reply: FastifyReply, session: WebSession, status = 200, error?: string) {
    return sendPage(
      reply,
      status,
      'Two-factor authentication',
      html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="${SIGN_IN_PATH}">
${csrfField(await sessions.csrfToken(session))}
<label for="user_otp_attempt">Enter the code from your two-factor authenticator app</label>
<input type="text" id="user_otp_attempt" name="user[otp_attempt]" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" required autofocus>
<button type="submit">Verify code</button>
</form>`,
    );
  }

  function tooMany(reply: FastifyReply, retryAfter: number) {
    reply.header('retry-after', String(retryAfter));
    return sendPage(
      reply,
      429,
      'Too many attempts',
      html`<p class="error" role="alert">Too many failed sign-in attempts. Try again in ${retryAfter} seconds.</p>`,
    );
  }

  async function complete(request: FastifyRequest, reply: FastifyReply, session: WebSession, userId: number) {
    const returnTo = safeReturnTo(session.data.return_to) ?? DEFAULT_AFTER_SIGN_IN;
    // auth_time (OIDC Core §2) is the moment the credentials were accepted.
    await sessions.signIn(request, reply, userId, { auth_time: Date.now() });
    await recordSignIn(db, userId);
    return redirect(reply, returnTo);
  }

  function failed(
    result: Exclude<CredentialResult, { ok: true }>,
    reply: FastifyReply,
    render: (status: number) => Promise<unknown>,
  ) {
    if (result.reason === 'rate_limited') return tooMany(reply, result.retryAfter);
    return render(401);
  }

  app.get(SIGN_IN_PATH, async (request, reply) => {
    const signedIn = await currentUser(app, db, request);
    const existing = signedIn ? await sessions.read(request) : undefined;
    // prompt=login / max_age asked for a fresh sign-in: show the form to the signed-in user too.
    if (signedIn && existing && !existing.data.reauthenticate) {
      const session = existing;
      return redirect(reply, safeReturnTo(session.data.return_to) ?? DEFAULT_AFTER_SIGN_IN);
    }
    const session = await sessions.ensure(request, reply);
    return passwordForm(reply, session);
  });

  app.post(SIGN_IN_PATH, SIGN_IN_FORM, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const session = await sessions.read(request);
    if (!session || !(await sessions.verifyCsrf(session, body[CSRF_FIELD]))) return csrfRejected(reply);

    const otpAttempt = stringParam(body, 'user[otp_attempt]');
    if (otpAttempt !== undefined) {
      const userId = session.data.otp_user_id;
      const fresh =
        session.data.otp_started_at !== undefined && Date.now() - session.data.otp_started_at < OTP_STEP_SECONDS * 1000;
      if (userId === undefined || !fresh) {
        delete session.data.otp_user_id;
        delete session.data.otp_started_at;
        await sessions.save(session);
        return passwordForm(reply, session, 401, 'Your sign-in took too long. Sign in again.');
      }
      const result = await checkOtp(db, userId, otpAttempt, request.ip);
      if (!result.ok) return failed(result, reply, (status) => otpForm(reply, session, status, INVALID_OTP));
      return complete(request, reply, session, result.user.id);
    }

    const login = stringParam(body, 'user[login]') ?? '';
    const password = stringParam(body, 'user[password]') ?? '';
    const result = await checkPassword(db, { login, password, address: request.ip });
    if (!result.ok)
      return failed(result, reply, (status) => passwordForm(reply, session, status, INVALID_LOGIN, login));
    if (twoFactorEnabled(result.user)) {
      session.data.otp_user_id = result.user.id;
      session.data.otp_started_at = Date.now();
      await sessions.save(session);
      return otpForm(reply, session);
    }
    return complete(request, reply, session, result.user.id);
  });

  app.get('/users/sign_out', async (request, reply) => {
    const user = await currentUser(app, db, request);
    if (!user) return redirect(reply, SIGN_IN_PATH);
    const session = (await sessions.read(request))!;
    return sendPage(
      reply,
      200,
      'Sign out',
      html`<form method="post" action="/users/sign_out">${csrfField(await sessions.csrfToken(session))}<button type="submit">Sign out</button></form>`,
      user.username,
    );
  });

  app.post('/users/sign_out', SIGN_OUT_FORM, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const session = await sessions.read(request);
    if (!session || !(await sessions.verifyCsrf(session, body[CSRF_FIELD]))) return csrfRejected(reply);
    await sessions.destroy(request, reply);
    return redirect(reply, SIGN_IN_PATH);
  });
}

export type { SafeHtml };
