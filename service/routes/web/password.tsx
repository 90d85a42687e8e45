// /-/user_settings/password/edit: change the password with the current one. Every other session
// of the user ends; this one continues under a new session id.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import { passwordProblem } from '../../domain/passwords';
import { setUserPassword } from '../../domain/users';
import { formRouteOptions } from '../../http/form-body';
import { stringParam } from '../../shared/params';
import { Button, CsrfField, type FieldError, type Flash, TextField } from '../../pages/components';
import {
  CURRENT_PASSWORD_WORDS,
  NEW_PASSWORD_WORDS,
  PASSWORD_CONFIRMATION_MISMATCH,
  problemOf,
  wordsFor,
} from '../../pages/form-words';
import * as React from '../../pages/jsx';
import { Layout, sendPage } from '../../pages/layout';
import {
  type AccountRequest,
  accountGuardFor,
  auditActor,
  currentPasswordRefusal,
  mailSettingsOf,
  pendingFlash,
  redirectWithFlash,
} from './account';

const EDIT = '/-/user_settings/password/edit';
const UPDATE = '/-/user_settings/password';
const FORM = formRouteOptions({ strings: ['user[password]', 'user[new_password]', 'user[password_confirmation]'] });

export async function passwordRoutes(app: FastifyInstance, context: AppContext) {
  const { db } = context;
  const guard = accountGuardFor(app);

  async function page(
    reply: FastifyReply,
    r: AccountRequest,
    opts: { status?: number; errors?: FieldError[]; flash?: Flash } = {},
  ) {
    const pending = opts.flash ? { flash: opts.flash } : await pendingFlash(app, r.session, EDIT);
    const err = (field: string) => opts.errors?.find((e) => e.field === field)?.message;
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Password"
        user={r.user}
        csrf={r.csrf}
        section={EDIT}
        flash={pending.flash}
        errors={opts.errors}
        lead="After a successful password change, you stay signed in here and are signed out everywhere else."
      >
        <section class="panel" aria-labelledby="change-title">
          <h2 id="change-title">Change your password</h2>
          <form method="post" action={UPDATE}>
            <CsrfField token={r.csrf} />
            <TextField
              id="user_password"
              name="user[password]"
              type="password"
              label="Current password"
              autocomplete="current-password"
              error={err('user_password')}
              required
            />
            <TextField
              id="user_new_password"
              name="user[new_password]"
              type="password"
              label="New password"
              hint="At least 8 characters."
              autocomplete="new-password"
              error={err('user_new_password')}
              required
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
              <Button>Save password</Button>
            </div>
          </form>
        </section>
      </Layout>,
    );
  }

  app.get(EDIT, async (request, reply) => {
    const r = await guard(request, reply);
    return r ? page(reply, r) : reply;
  });

  app.post(UPDATE, FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const current = stringParam(body, 'user[password]') ?? '';
    const next = stringParam(body, 'user[new_password]') ?? '';
    const confirmation = stringParam(body, 'user[password_confirmation]') ?? '';
    // The form's own problems first: no password hash is spent on a form that cannot succeed.
    const errors: FieldError[] = [];
    if (current === '') errors.push({ field: 'user_password', message: CURRENT_PASSWORD_WORDS.blank });
    const problem = passwordProblem(next);
    if (problem)
      errors.push({
        field: 'user_new_password',
        message: wordsFor(NEW_PASSWORD_WORDS, next === '' ? 'blank' : problemOf(problem)),
      });
    else if (next !== confirmation)
      errors.push({ field: 'user_password_confirmation', message: PASSWORD_CONFIRMATION_MISMATCH });
    if (errors.length) return page(reply, r, { status: 422, errors });
    const refused = await currentPasswordRefusal(db, request, reply, r.user, current, 'user_password');
    if (refused) return page(reply, r, refused);
    // Ends every session of the user, this one too, in the password's own transaction; the fresh
    // session below keeps this browser signed in under the same sid, so only the applications of
    // the other sessions get back-channel logout tokens.
    const { sid, auth_time } = r.session.data;
    await setUserPassword(
      db,
      r.user.username,
      next,
      auditActor(r.user, request).actor,
      mailSettingsOf(context.config),
      sid,
    );
    const session = await app.sessions.signIn(request, reply, r.user.id, { sid, auth_time });
    return redirectWithFlash(app, reply, session, EDIT, {
      notice: 'Password was successfully updated. Other sessions have been signed out.',
    });
  });
}
