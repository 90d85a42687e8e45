// /users/sign_in (password, then a TOTP or recovery-code step for users with 2FA) and /users/sign_out.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import type { WebSession } from '../../domain/sessions';
import { type CredentialResult, checkOtp, checkPassword, recordSignIn } from '../../domain/sign-in';
import { twoFactorEnabled } from '../../domain/users';
import { formRouteOptions } from '../../http/form-body';
import { stringParam } from '../../shared/params';
import { CSRF_FIELD } from '../../http/session';
import { csrfRejected } from '../../pages/common';
import { sendTooManyRequests } from '../../pages/error-page';
import { Button, CsrfField, TextField } from '../../pages/components';
import { currentUser, DEFAULT_AFTER_SIGN_IN, SIGN_IN_PATH, safeReturnTo } from '../../pages/current-user';
import { takeFlash } from '../../pages/flash';
import * as React from '../../pages/jsx';
import { Layout, redirect, sendPage } from '../../pages/layout';
import { NEW_PASSWORD_PATH } from './password-reset';

/** How long the TOTP step may follow the password step. */
const OTP_STEP_SECONDS = 300;
const INVALID_LOGIN = 'Invalid login or password.';
const INVALID_OTP = 'Invalid two-factor code.';

/** The password step's fields, or the TOTP step's. */
const SIGN_IN_FORM = formRouteOptions({ strings: ['user[login]', 'user[password]', 'user[otp_attempt]'] });
const SIGN_OUT_FORM = formRouteOptions({ strings: [] });

export { csrfRejected };

export async function signInRoutes(app: FastifyInstance, { db }: AppContext) {
  const sessions = app.sessions;

  async function passwordForm(reply: FastifyReply, session: WebSession, status = 200, error?: string, login = '') {
    // A message left by the page before (e.g. "check your e-mail" after a password reset request).
    const flash = error ? { alert: error } : (await takeFlash(sessions, session, SIGN_IN_PATH, reply)).flash;
    return sendPage(
      reply,
      status,
      <Layout title="Sign in" variant="card" flash={flash}>
        <form method="post" action={SIGN_IN_PATH}>
          <CsrfField token={await sessions.csrfToken(session)} />
          <TextField
            id="user_login"
            name="user[login]"
            label="Username or primary email"
            value={login}
            autocomplete="username"
            required
            autofocus
          />
          <TextField
            id="user_password"
            name="user[password]"
            type="password"
            label="Password"
            autocomplete="current-password"
            required
          />
          <div class="actions">
            <Button>Sign in</Button>
            <a href={NEW_PASSWORD_PATH}>Forgot your password?</a>
          </div>
        </form>
      </Layout>,
    );
  }

  async function otpForm(reply: FastifyReply, session: WebSession, status = 200, error?: string) {
    return sendPage(
      reply,
      status,
      <Layout title="Two-factor authentication" variant="card">
        <form method="post" action={SIGN_IN_PATH}>
          <CsrfField token={await sessions.csrfToken(session)} />
          <TextField
            id="user_otp_attempt"
            name="user[otp_attempt]"
            label="Two-factor code"
            hint="Enter the code from your authenticator app, or one of your recovery codes."
            error={error}
            autocomplete="one-time-code"
            required
            autofocus
          />
          <div class="actions">
            <Button>Verify code</Button>
          </div>
        </form>
      </Layout>,
    );
  }

  const tooMany = (reply: FastifyReply, retryAfter: number) =>
    sendTooManyRequests(reply, retryAfter, 'Too many failed sign-in attempts', {
      href: SIGN_IN_PATH,
      label: 'Back to sign in',
    });

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
    const signedIn = await currentUser(sessions, request);
    // prompt=login / max_age asked for a fresh sign-in: show the form to the signed-in user too.
    if (signedIn && !signedIn.session.data.reauthenticate) {
      return redirect(reply, safeReturnTo(signedIn.session.data.return_to) ?? DEFAULT_AFTER_SIGN_IN);
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
        await sessions.save(session, reply);
        return passwordForm(reply, session, 401, 'Your sign-in took too long. Sign in again.');
      }
      const result = await checkOtp(db, userId, otpAttempt, request.ip, sessions.keyRing());
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
      await sessions.save(session, reply);
      return otpForm(reply, session);
    }
    return complete(request, reply, session, result.user.id);
  });

  app.get('/users/sign_out', async (request, reply) => {
    const current = await currentUser(sessions, request);
    if (!current) return redirect(reply, SIGN_IN_PATH);
    const { user, session } = current;
    const csrf = await sessions.csrfToken(session);
    return sendPage(
      reply,
      200,
      <Layout title="Sign out" variant="card" user={user}>
        <p>You are signed in as {user.username}.</p>
        <form method="post" action="/users/sign_out">
          <CsrfField token={csrf} />
          <div class="actions">
            <Button>Sign out</Button>
          </div>
        </form>
      </Layout>,
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
