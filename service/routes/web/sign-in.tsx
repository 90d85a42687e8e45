// /users/sign_in (password, then a TOTP or recovery-code step for users with 2FA) and /users/sign_out.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import type { User } from '../../db/schema';
import type { WebSession } from '../../domain/sessions';
import { type CredentialResult, checkOtp, checkPassword, recordSignIn } from '../../domain/sign-in';
import { DomainError } from '../../domain/errors';
import { findApplicationByUid } from '../../domain/applications';
import { newTotpSecret } from '../../domain/totp';
import { enableTwoFactor } from '../../domain/two-factor';
import { findUserById, twoFactorEnabled, twoFactorEnrolmentPending } from '../../domain/users';
import { formRouteOptions } from '../../http/form-body';
import { stringParam } from '../../shared/params';
import { CSRF_FIELD } from '../../http/session';
import { csrfRejected } from '../../pages/common';
import { sendTooManyRequests } from '../../pages/error-page';
import { Button, CsrfField, TextField } from '../../pages/components';
import { currentUser, DEFAULT_AFTER_SIGN_IN, SIGN_IN_PATH, safeReturnTo } from '../../pages/current-user';
import { seal, setFlash, takeFlash, unseal } from '../../pages/flash';
import { RECOVERY_CODE_WORDS, SIGN_IN_CODE_WORDS, TOTP_CODE_WORDS, wordsFor } from '../../pages/form-words';
import * as React from '../../pages/jsx';
import { Layout, redirect, seeOther, sendPage } from '../../pages/layout';
import { auditActor } from './account';
import { ENROLLED, EnrolmentPanel, keepRecoveryCodes, TWO_FACTOR_PATH } from './two-factor';
import { NEW_PASSWORD_PATH } from './password-reset';
import { completeSignIn, pendingSecondStep } from './sign-in-steps';
import { PasskeySignIn, SecurityKeyStep } from './webauthn';
import { WEBAUTHN_SCRIPT_PATH } from '../../pages/webauthn-script';
import { authenticationMethods } from '../../domain/authentication-methods';

const INVALID_LOGIN = 'Invalid login or password.';

/** The password step's fields, or the TOTP step's. */
const SIGN_IN_FORM = formRouteOptions({ strings: ['user[login]', 'user[password]', 'user[otp_attempt]', 'restart'] });
const ENROL_FORM = formRouteOptions({ strings: ['pin_code'] });
/** The enrolment a person who must set up 2FA sees after their password (not signed in until done). */
const ENROL_PATH = '/users/two_factor_enrolment';
/** Sign out; `return_to` (our own path): where the next sign-in continues (the consent page's "Not you?"). */
const SIGN_OUT_FORM = formRouteOptions({ strings: ['return_to'] });

export { csrfRejected };

export async function signInRoutes(app: FastifyInstance, { db }: AppContext) {
  const sessions = app.sessions;

  /**
   * The application a sign-in is for, when it was sent here by /oauth/authorize (its return path
   * names the client_id): "Sign in to continue to <name>".
   */
  async function continuingTo(session: WebSession): Promise<string | undefined> {
    const returnTo = safeReturnTo(session.data.return_to);
    if (!returnTo) return undefined;
    const url = new URL(returnTo, 'http://lanyard.invalid');
    const clientId = url.pathname === '/oauth/authorize' ? url.searchParams.get('client_id') : null;
    if (!clientId || !/^[\x21-\x7e]{1,128}$/.test(clientId)) return undefined;
    return (await findApplicationByUid(db, clientId))?.name;
  }

  async function passwordForm(reply: FastifyReply, session: WebSession, status = 200, error?: string, login = '') {
    // A message left by the page before (e.g. "check your e-mail" after a password reset request).
    const flash = error ? { alert: error } : (await takeFlash(sessions, session, SIGN_IN_PATH, reply)).flash;
    const appName = await continuingTo(session);
    // Focus the first field to fill: the login when empty, else (after a refusal) the password.
    const focusLogin = login === '';
    return sendPage(
      reply,
      status,
      <Layout
        title="Sign in"
        variant="card"
        flash={flash}
        scripts={[WEBAUTHN_SCRIPT_PATH]}
        lead={appName ? ['Sign in to continue to ', <strong id="continue-to">{appName}</strong>] : undefined}
      >
        <form method="post" action={SIGN_IN_PATH}>
          <CsrfField token={await sessions.csrfToken(session)} />
          <TextField
            id="user_login"
            name="user[login]"
            label="Username or primary email"
            value={login}
            autocomplete="username webauthn"
            required
            autofocus={focusLogin}
          />
          <TextField
            id="user_password"
            name="user[password]"
            type="password"
            label="Password"
            autocomplete="current-password"
            required
            autofocus={!focusLogin}
          />
          <div class="show-password">
            <button type="button" class="button small" data-show-password="#user_password" hidden>
              Show password
            </button>
          </div>
          <div class="actions">
            <Button>Sign in</Button>
            <a href={NEW_PASSWORD_PATH}>Forgot your password?</a>
          </div>
        </form>
        <PasskeySignIn csrf={await sessions.csrfToken(session)} />
      </Layout>,
    );
  }

  /** Someone else at this browser: back to the password step, keeping where sign-in was going. */
  const SignInAsSomeoneElse = ({ csrf }: { csrf: string }) => (
    <form method="post" action={SIGN_IN_PATH} class="other-user">
      <CsrfField token={csrf} />
      <button type="submit" class="link-button" name="restart" value="1">
        Sign in as someone else
      </button>
    </form>
  );

  const ENROL_MINUTES = 15;
  const enrolment = (session: WebSession) => {
    const e = session.data.enrol;
    return e && Date.now() - e.started_at < ENROL_MINUTES * 60 * 1000 ? e : undefined;
  };

  /** The required enrolment (`set-2fa on --require-enrolment`): the secret waits in the session, sealed. */
  async function enrolForm(reply: FastifyReply, session: WebSession, status = 200, error?: string) {
    const e = enrolment(session)!;
    const sealed = session.data.pending_otp;
    let secret = sealed ? unseal(session, sealed) : undefined;
    if (typeof secret !== 'string') {
      secret = newTotpSecret();
      session.data.pending_otp = seal(session, secret);
      await sessions.save(session, reply);
    }
    const csrf = await sessions.csrfToken(session);
    return sendPage(
      reply,
      status,
      <Layout
        title="Set up two-factor authentication"
        variant="card"
        errors={error ? [{ field: 'pin_code', message: error }] : undefined}
        lead="Your administrator requires a code from your phone in addition to your password. Set it up now to continue."
      >
        <EnrolmentPanel secret={secret as string} email={e.email} csrf={csrf} action={ENROL_PATH} error={error} />
        <SignInAsSomeoneElse csrf={csrf} />
      </Layout>,
    );
  }

  /** The second step: a passkey or security key first when the person has one; a code (TOTP or recovery) stays possible. */
  async function secondStep(
    reply: FastifyReply,
    session: WebSession,
    user: Pick<User, 'otp_secret' | 'webauthn_credential_count'>,
    status = 200,
    codeError?: string,
  ) {
    if (user.webauthn_credential_count > 0) {
      const csrf = await sessions.csrfToken(session);
      return sendPage(
        reply,
        status,
        <SecurityKeyStep csrf={csrf} totp={user.otp_secret !== null} otpError={codeError} />,
      );
    }
    return otpForm(reply, session, status, codeError);
  }

  async function otpForm(reply: FastifyReply, session: WebSession, status = 200, error?: string) {
    return sendPage(
      reply,
      status,
      <Layout
        title="Two-factor authentication"
        variant="card"
        errors={error ? [{ field: 'user_otp_attempt', message: error }] : undefined}
      >
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
            autofocus={error === undefined}
          />
          <div class="actions">
            <Button>Verify code</Button>
          </div>
        </form>
        <SignInAsSomeoneElse csrf={await sessions.csrfToken(session)} />
      </Layout>,
    );
  }

  const tooMany = (reply: FastifyReply, retryAfter: number) =>
    sendTooManyRequests(reply, retryAfter, 'Too many failed sign-in attempts', {
      href: SIGN_IN_PATH,
      label: 'Back to sign in',
    });

  const complete = (request: FastifyRequest, reply: FastifyReply, session: WebSession, userId: number, amr: string[]) =>
    completeSignIn(app, db, request, reply, session, userId, amr);

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
    // The password was accepted and the second step is open: the POST answered 303 here, so Back and
    // reload repeat this GET, never the password.
    const pendingUserId = pendingSecondStep(session);
    if (pendingUserId !== undefined) {
      const user = await findUserById(db, pendingUserId);
      if (user && twoFactorEnabled(user)) return secondStep(reply, session, user);
    }
    return passwordForm(reply, session);
  });

  app.post(SIGN_IN_PATH, SIGN_IN_FORM, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const session = await sessions.read(request);
    if (!session || !(await sessions.verifyCsrf(session, body[CSRF_FIELD]))) return csrfRejected(reply);

    if (stringParam(body, 'restart') !== undefined) {
      delete session.data.otp_user_id;
      delete session.data.otp_started_at;
      delete session.data.enrol;
      delete session.data.pending_otp;
      await sessions.save(session, reply);
      return seeOther(reply, SIGN_IN_PATH);
    }
    const otpAttempt = stringParam(body, 'user[otp_attempt]');
    if (otpAttempt !== undefined) {
      const userId = pendingSecondStep(session);
      if (userId === undefined) {
        delete session.data.otp_user_id;
        delete session.data.otp_started_at;
        await sessions.save(session, reply);
        return passwordForm(reply, session, 401, 'Your sign-in took too long. Sign in again.');
      }
      const result = await checkOtp(db, userId, otpAttempt, request.ip, sessions.keyRing());
      if (!result.ok)
        return failed(result, reply, async (status) => {
          // A person with a passkey or security key gets that step back, with the code's error.
          const user = await findUserById(db, userId);
          const words = wordsFor(
            user?.otp_secret === null ? RECOVERY_CODE_WORDS : SIGN_IN_CODE_WORDS,
            otpAttempt.trim() === '' ? 'blank' : 'invalid',
          );
          return user ? secondStep(reply, session, user, status, words) : otpForm(reply, session, status, words);
        });
      return complete(request, reply, session, result.user.id, authenticationMethods(['pwd', 'otp']));
    }

    const login = stringParam(body, 'user[login]') ?? '';
    const password = stringParam(body, 'user[password]') ?? '';
    const result = await checkPassword(db, { login, password, address: request.ip });
    if (!result.ok)
      return failed(result, reply, (status) => passwordForm(reply, session, status, INVALID_LOGIN, login));
    if (twoFactorEnrolmentPending(result.user)) {
      delete session.data.pending_otp;
      session.data.enrol = {
        user_id: result.user.id,
        username: result.user.username,
        email: result.user.email,
        started_at: Date.now(),
      };
      await sessions.save(session, reply);
      return seeOther(reply, ENROL_PATH);
    }
    if (twoFactorEnabled(result.user)) {
      session.data.otp_user_id = result.user.id;
      session.data.otp_started_at = Date.now();
      await sessions.save(session, reply);
      return seeOther(reply, SIGN_IN_PATH);
    }
    return complete(request, reply, session, result.user.id, authenticationMethods(['pwd']));
  });

  app.get(ENROL_PATH, async (request, reply) => {
    const session = await sessions.read(request);
    if (!session || !enrolment(session)) return redirect(reply, SIGN_IN_PATH);
    return enrolForm(reply, session);
  });

  app.post(ENROL_PATH, ENROL_FORM, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const session = await sessions.read(request);
    if (!session || !(await sessions.verifyCsrf(session, body[CSRF_FIELD]))) return csrfRejected(reply);
    const e = enrolment(session);
    const sealed = session.data.pending_otp;
    const secret = sealed ? unseal(session, sealed) : undefined;
    if (!e || typeof secret !== 'string') {
      delete session.data.enrol;
      await sessions.save(session, reply);
      return passwordForm(reply, session, 401, 'Your sign-in took too long. Sign in again.');
    }
    const pin = stringParam(body, 'pin_code') ?? '';
    let codes: string[];
    try {
      const ring = await sessions.keyRing().load();
      codes = await enableTwoFactor(db, ring, e.user_id, secret, pin, auditActor(e, request));
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'invalid')
        return enrolForm(reply, session, 422, wordsFor(TOTP_CODE_WORDS, pin.trim() === '' ? 'blank' : 'invalid'));
      throw err;
    }
    const returnTo = safeReturnTo(session.data.return_to);
    const signedIn = await sessions.signIn(request, reply, e.user_id, {
      auth_time: Date.now(),
      ...(returnTo ? { return_to: returnTo } : {}),
    });
    await recordSignIn(db, e.user_id);
    keepRecoveryCodes(signedIn, codes);
    await setFlash(sessions, signedIn, TWO_FACTOR_PATH, { notice: ENROLLED });
    return seeOther(reply, TWO_FACTOR_PATH);
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
    const returnTo = safeReturnTo(body.return_to);
    // A fresh anonymous session (in its cookie) remembers where to continue.
    if (returnTo) await sessions.ensure(request, reply, { return_to: returnTo });
    return redirect(reply, SIGN_IN_PATH);
  });
}
