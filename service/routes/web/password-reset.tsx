// Forgotten passwords, at GitLab's paths: /users/password/new (the address) → POST /users/password
// → the mailed link /users/password/edit?reset_password_token=… (the new password) → POST
// /users/password/edit → sign in. Anonymous pages: the CSRF token lives in the anonymous session,
// as on the sign-in page. The rules are domain/password-reset.ts's.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import { DomainError } from '../../domain/errors';
import { isValidEmail } from '../../domain/email-address';
import { findResetTokenUser, requestPasswordReset, resetPassword } from '../../domain/password-reset';
import type { WebSession } from '../../domain/sessions';
import { formRouteOptions } from '../../http/form-body';
import { CSRF_FIELD } from '../../http/session';
import { csrfRejected } from '../../pages/common';
import { Button, CsrfField, type FieldError, TextField } from '../../pages/components';
import { setFlash } from '../../pages/flash';
import {
  EMAIL_WORDS,
  NEW_PASSWORD_WORDS,
  PASSWORD_CONFIRMATION_MISMATCH,
  problemOf,
  wordsFor,
} from '../../pages/form-words';
import * as React from '../../pages/jsx';
import { Layout, seeOther, sendPage } from '../../pages/layout';
import { stringParam } from '../../shared/params';
import { mailSettingsOf } from './account';
import { SIGN_IN_PATH } from '../../pages/current-user';

export const NEW_PASSWORD_PATH = '/users/password/new';
const REQUEST = '/users/password';
const EDIT = '/users/password/edit';
const REQUEST_FORM = formRouteOptions({ strings: ['user[email]'] });
const RESET_FORM = formRouteOptions({
  strings: ['reset_password_token', 'user[password]', 'user[password_confirmation]'],
});
const EDIT_QUERY = {
  schema: { querystring: { type: 'object', properties: { reset_password_token: { type: 'string' } } } },
} as const;

/** What everyone who asks is told, whether or not the address is anyone's (no enumeration). */
const RESET_REQUESTED =
  'If your e-mail address is confirmed on an account here, you will receive a link to reset your password in a few minutes.';

export async function passwordResetRoutes(app: FastifyInstance, { db, config }: AppContext) {
  const sessions = app.sessions;

  async function verified(request: FastifyRequest, reply: FastifyReply): Promise<WebSession | undefined> {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const session = await sessions.read(request);
    if (!session || !(await sessions.verifyCsrf(session, body[CSRF_FIELD]))) {
      await csrfRejected(reply);
      return undefined;
    }
    return session;
  }

  async function requestForm(reply: FastifyReply, session: WebSession, status = 200, error?: string, value = '') {
    return sendPage(
      reply,
      status,
      <Layout
        title="Forgot your password?"
        variant="card"
        lead="Enter your e-mail address and we will send you a link to choose a new password."
        errors={error ? [{ field: 'user_email', message: error }] : undefined}
      >
        <form method="post" action={REQUEST}>
          <CsrfField token={await sessions.csrfToken(session)} />
          <TextField
            id="user_email"
            name="user[email]"
            type="email"
            label="E-mail address"
            autocomplete="email"
            maxlength={254}
            value={value}
            error={error}
            required
            autofocus={error === undefined}
          />
          <div class="actions">
            <Button>Reset password</Button>
          </div>
        </form>
        <p>
          <a href={SIGN_IN_PATH}>Back to sign in</a>
        </p>
      </Layout>,
    );
  }

  function invalidLink(reply: FastifyReply) {
    return sendPage(
      reply,
      404,
      <Layout title="Password reset link not valid" variant="card">
        <p class="flash flash-alert" role="alert" id="flash-alert">
          This password reset link is invalid, has expired or has already been used. Nothing was changed.
        </p>
        <p>
          <a href={NEW_PASSWORD_PATH}>Ask for a new link</a> or <a href={SIGN_IN_PATH}>sign in</a>.
        </p>
      </Layout>,
    );
  }

  async function resetForm(
    reply: FastifyReply,
    session: WebSession,
    token: string,
    status = 200,
    errors?: FieldError[],
  ) {
    const err = (field: string) => errors?.find((e) => e.field === field)?.message;
    return sendPage(
      reply,
      status,
      <Layout title="Change your password" variant="card" errors={errors}>
        <form method="post" action={EDIT}>
          <CsrfField token={await sessions.csrfToken(session)} />
          <input type="hidden" name="reset_password_token" value={token} />
          <TextField
            id="user_password"
            name="user[password]"
            type="password"
            label="New password"
            hint="At least 8 characters."
            autocomplete="new-password"
            error={err('user_password')}
            required
            autofocus={!errors?.length}
          />
          <TextField
            id="user_password_confirmation"
            name="user[password_confirmation]"
            type="password"
            label="Confirm new password"
            autocomplete="new-password"
            error={err('user_password_confirmation')}
            required
          />
          <div class="actions">
            <Button>Change your password</Button>
          </div>
        </form>
      </Layout>,
    );
  }

  app.get(NEW_PASSWORD_PATH, async (request, reply) => requestForm(reply, await sessions.ensure(request, reply)));

  app.post(REQUEST, REQUEST_FORM, async (request, reply) => {
    const session = await verified(request, reply);
    if (!session) return reply;
    const email = stringParam((request.body ?? {}) as Record<string, unknown>, 'user[email]') ?? '';
    // Nothing that could be anyone's address: say how to fix it, send nothing, count nothing.
    const typed = email.trim();
    if (typed === '' || !isValidEmail(typed))
      return requestForm(
        reply,
        session,
        422,
        wordsFor(EMAIL_WORDS, typed === '' ? 'blank' : 'invalid'),
        typed.slice(0, 254),
      );
    const result = await requestPasswordReset(db, { email, clientAddress: request.ip, mail: mailSettingsOf(config) });
    if (!result.ok) {
      reply.header('retry-after', String(result.retryAfter));
      return sendPage(
        reply,
        429,
        <Layout title="Too many requests" variant="card">
          <p class="flash flash-alert" role="alert" id="flash-alert">
            Too many password reset requests. Try again in {Math.ceil(result.retryAfter / 60)} minutes.
          </p>
          <p>
            <a href={SIGN_IN_PATH}>Back to sign in</a>
          </p>
        </Layout>,
      );
    }
    await setFlash(sessions, session, SIGN_IN_PATH, { notice: RESET_REQUESTED }, undefined, reply);
    return seeOther(reply, SIGN_IN_PATH);
  });

  app.get<{ Querystring: { reset_password_token?: string } }>(EDIT, EDIT_QUERY, async (request, reply) => {
    const token = request.query.reset_password_token ?? '';
    if (!(await findResetTokenUser(db, token))) return invalidLink(reply);
    return resetForm(reply, await sessions.ensure(request, reply), token);
  });

  app.post(EDIT, RESET_FORM, async (request, reply) => {
    const session = await verified(request, reply);
    if (!session) return reply;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const token = stringParam(body, 'reset_password_token') ?? '';
    const password = stringParam(body, 'user[password]') ?? '';
    try {
      const result = await resetPassword(db, {
        token,
        password,
        confirmation: stringParam(body, 'user[password_confirmation]') ?? '',
        mail: mailSettingsOf(config),
        ipAddress: request.ip,
      });
      if (!result.ok) return invalidLink(reply);
    } catch (err) {
      const details = err instanceof DomainError ? err.details : undefined;
      if (!details) throw err;
      const errors: FieldError[] = [];
      if (details.password)
        errors.push({
          field: 'user_password',
          message: wordsFor(NEW_PASSWORD_WORDS, password === '' ? 'blank' : problemOf(details.password[0])),
        });
      if (details.password_confirmation)
        errors.push({ field: 'user_password_confirmation', message: PASSWORD_CONFIRMATION_MISMATCH });
      return resetForm(reply, session, token, 422, errors);
    }
    // Every session of the user ended with the new password; this anonymous one carries the notice.
    await setFlash(
      sessions,
      session,
      SIGN_IN_PATH,
      { notice: 'Your password has been changed. Sign in with your new password.' },
      undefined,
      reply,
    );
    return seeOther(reply, SIGN_IN_PATH);
  });
}
