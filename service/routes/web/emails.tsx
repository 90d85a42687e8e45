// /-/profile/emails: the signed-in user's addresses — add (a confirmation link goes to the new
// address, an alert to the primary), resend the link, remove (after a confirm step), make a
// confirmed address primary — and the confirmation link itself (/-/profile/emails/confirmation),
// which works signed in or not. The rules are domain/emails.ts's.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import {
  type AccountEmail,
  addEmail,
  confirmEmail,
  findAccountEmail,
  listAccountEmailsPage,
  makePrimaryEmail,
  MAX_EMAIL_LENGTH,
  removeEmail,
  resendConfirmation,
} from '../../domain/emails';
import { DomainError, RateLimitedError } from '../../domain/errors';
import {
  clearOwnSuppression,
  normalizeAddress,
  type SuppressionReason,
  suppressedAmong,
} from '../../domain/mail/suppressions';
import { formRouteOptions } from '../../http/form-body';
import { stringParam } from '../../shared/params';
import {
  Button,
  CsrfField,
  type FieldError,
  type Flash,
  LinkButton,
  PostButton,
  TextField,
  Time,
} from '../../pages/components';
import { EMAIL_WORDS, problemOf, wordsFor } from '../../pages/form-words';
import * as React from '../../pages/jsx';
import { ConfirmPage, Layout, sendPage } from '../../pages/layout';
import { pageNumberOf, pageWindow, Pagination } from '../../pages/pagination';
import {
  type AccountRequest,
  accountGuardFor,
  auditActor,
  mailSettingsOf,
  pendingFlash,
  redirectWithFlash,
} from './account';
import { currentUser } from '../../pages/current-user';

const BASE = '/-/profile/emails';
const CONFIRMATION = `${BASE}/confirmation`;
const ADD_FORM = formRouteOptions({ strings: ['email[email]'] });
const idParams = {
  params: { type: 'object', properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' } }, required: ['id'] },
} as const;
const ID_FORM = formRouteOptions({ strings: [] }, idParams);
const RESUME = `${BASE}/resume`;
const RESUME_FORM = formRouteOptions({ strings: ['email'] });
const SUPPRESSED_WORDS: Record<SuppressionReason, string> = {
  bounce: 'Mail to this address bounced, so we stopped sending to it.',
  complaint: 'Mail to this address was reported as spam, so we stopped sending to it.',
};
const CONFIRMATION_QUERY = {
  schema: {
    querystring: {
      type: 'object',
      properties: { confirmation_token: { type: 'string' } },
    },
  },
} as const;

function Status({ email }: { email: AccountEmail }) {
  return (
    <>
      {email.primary ? <span class="badge">Primary</span> : null}
      {email.confirmedAt ? <span class="badge">Confirmed</span> : <span class="badge">Unconfirmed</span>}
    </>
  );
}

export async function emailRoutes(app: FastifyInstance, context: AppContext) {
  const { db, config } = context;
  const guard = accountGuardFor(app, context);

  async function page(
    reply: FastifyReply,
    r: AccountRequest,
    opts: { status?: number; errors?: FieldError[]; flash?: Flash; value?: string; page?: number } = {},
  ) {
    const pending = opts.flash ? { flash: opts.flash } : await pendingFlash(app, r.session, BASE);
    const pageNumber = opts.page ?? 1;
    const emails = await listAccountEmailsPage(db, r.user, pageWindow(pageNumber));
    const suppressed = await suppressedAmong(
      db,
      emails.rows.map((e) => e.email),
    );
    const error = opts.errors?.find((e) => e.field === 'email_email')?.message;
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Emails"
        user={r.user}
        csrf={r.csrf}
        section={BASE}
        flash={pending.flash}
        errors={opts.errors}
        lead="Your primary address is where account e-mails go and how you can sign in. Only confirmed addresses can be primary or receive notifications."
      >
        <section class="panel" aria-labelledby="add-email-title">
          <h2 id="add-email-title">Add an e-mail address</h2>
          <form method="post" action={BASE}>
            <CsrfField token={r.csrf} />
            <TextField
              id="email_email"
              name="email[email]"
              type="email"
              label="E-mail address"
              hint="We send a confirmation link to it; it can be used once you follow that link."
              value={opts.value}
              error={error}
              autocomplete="email"
              maxlength={MAX_EMAIL_LENGTH}
              required
            />
            <div class="actions">
              <Button>Add e-mail address</Button>
            </div>
          </form>
        </section>
        <h2 id="emails-title">Your e-mail addresses ({emails.total})</h2>
        <table class="list" id="emails" aria-labelledby="emails-title">
          <thead>
            <tr>
              <th scope="col">Address</th>
              <th scope="col">Status</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {emails.rows.map((e) => (
              <tr id={e.id === null ? 'email-primary' : `email-${e.id}`}>
                <td data-label="Address" class="address">
                  {e.email}
                </td>
                <td data-label="Status">
                  <Status email={e} />
                  {suppressed.has(normalizeAddress(e.email)) ? (
                    <>
                      <span class="badge">Not receiving e-mail</span>
                      <span class="hint">{SUPPRESSED_WORDS[suppressed.get(normalizeAddress(e.email))!]}</span>
                      <form method="post" action={RESUME} class="inline-form">
                        <CsrfField token={r.csrf} />
                        <input type="hidden" name="email" value={e.email} />
                        <Button variant="secondary" small>
                          Resume e-mail
                        </Button>
                      </form>
                    </>
                  ) : null}
                  {!e.confirmedAt && e.confirmationSentAt ? (
                    <span class="hint">
                      Link sent <Time value={e.confirmationSentAt} />
                    </span>
                  ) : null}
                </td>
                <td class="actions-cell">
                  {e.id === null ? null : (
                    <>
                      {e.confirmedAt ? (
                        <PostButton action={`${BASE}/${e.id}/primary`} csrf={r.csrf} variant="secondary" small>
                          Make primary
                        </PostButton>
                      ) : (
                        <PostButton
                          action={`${BASE}/${e.id}/resend_confirmation_instructions`}
                          csrf={r.csrf}
                          variant="secondary"
                          small
                        >
                          Resend confirmation
                        </PostButton>
                      )}{' '}
                      <LinkButton href={`${BASE}/${e.id}/delete`} variant="danger" small>
                        Remove
                      </LinkButton>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <Pagination path={BASE} page={pageNumber} total={emails.total} label="E-mail addresses pages" />
      </Layout>,
    );
  }

  /** A refusal of the domain (not found, not allowed now, too many links) as the page with its alert. */
  const refused = (reply: FastifyReply, r: AccountRequest, err: unknown) => {
    if (err instanceof RateLimitedError) {
      reply.header('retry-after', String(err.retryAfterSeconds));
      const minutes = Math.ceil(err.retryAfterSeconds / 60);
      return page(reply, r, {
        status: 429,
        flash: { alert: `Too many confirmation e-mails. Try again in ${minutes} minutes.` },
      });
    }
    if (!(err instanceof DomainError) || err.kind === 'invalid' || err.kind === 'forbidden') throw err;
    return page(reply, r, { status: err.kind === 'not_found' ? 404 : 409, flash: { alert: err.message } });
  };

  const ctxOf = (r: AccountRequest, request: Parameters<typeof auditActor>[1]) => ({
    ...auditActor(r.user, request),
    mail: mailSettingsOf(config),
  });

  app.get(BASE, async (request, reply) => {
    const r = await guard(request, reply);
    return r ? page(reply, r, { page: pageNumberOf(request.query) }) : reply;
  });

  app.post(BASE, ADD_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const value = stringParam((request.body ?? {}) as Record<string, unknown>, 'email[email]') ?? '';
    try {
      const added = await addEmail(db, r.user, value, ctxOf(r, request));
      return redirectWithFlash(app, reply, r.session, BASE, {
        notice: `We sent a confirmation link to ${added.email}. Follow it to confirm the address.`,
      });
    } catch (err) {
      if (err instanceof RateLimitedError) return refused(reply, r, err);
      const field = err instanceof DomainError ? err.details?.email?.[0] : undefined;
      if (!field) throw err;
      return page(reply, r, {
        status: 422,
        errors: [{ field: 'email_email', message: wordsFor(EMAIL_WORDS, problemOf(field)) }],
        value: value.slice(0, MAX_EMAIL_LENGTH + 1),
      });
    }
  });

  app.post<{ Params: { id: string } }>(
    `${BASE}/:id/resend_confirmation_instructions`,
    ID_FORM,
    async (request, reply) => {
      const r = await guard(request, reply);
      if (!r) return reply;
      try {
        const email = await resendConfirmation(db, r.user, Number(request.params.id), ctxOf(r, request));
        return redirectWithFlash(app, reply, r.session, BASE, {
          notice: `We sent a new confirmation link to ${email}.`,
        });
      } catch (err) {
        return refused(reply, r, err);
      }
    },
  );

  app.post<{ Params: { id: string } }>(`${BASE}/:id/primary`, ID_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    try {
      const email = await makePrimaryEmail(db, r.user, Number(request.params.id), ctxOf(r, request));
      return redirectWithFlash(app, reply, r.session, BASE, { notice: `${email} is now your primary address.` });
    } catch (err) {
      return refused(reply, r, err);
    }
  });

  app.post(RESUME, RESUME_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const address = stringParam((request.body ?? {}) as Record<string, unknown>, 'email') ?? '';
    try {
      const cleared = await clearOwnSuppression(db, r.user, address, auditActor(r.user, request));
      return redirectWithFlash(app, reply, r.session, BASE, {
        notice: `E-mail to ${cleared.address} resumed. If it bounces again, it stops again.`,
      });
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'not_found')
        return page(reply, r, {
          status: 404,
          flash: {
            alert: `E-mail to ${address.trim()} is not stopped on your account, so there is nothing to resume.`,
          },
        });
      return refused(reply, r, err);
    }
  });

  app.get<{ Params: { id: string } }>(`${BASE}/:id/delete`, { schema: idParams }, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const email = await findAccountEmail(db, r.user, Number(request.params.id));
    if (!email) return page(reply, r, { status: 404, flash: { alert: 'That e-mail address was not found.' } });
    return sendPage(
      reply,
      200,
      <ConfirmPage
        title="Remove e-mail address"
        user={r.user}
        csrf={r.csrf}
        section={BASE}
        action={`${BASE}/${email.id}/delete`}
        confirmLabel="Remove"
      >
        <p>
          Remove <strong>{email.email}</strong> from your account? Notifications sent to it go to your primary address
          instead.
        </p>
      </ConfirmPage>,
    );
  });

  app.post<{ Params: { id: string } }>(`${BASE}/:id/delete`, ID_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    try {
      const email = await removeEmail(db, r.user, Number(request.params.id), auditActor(r.user, request));
      return redirectWithFlash(app, reply, r.session, BASE, { notice: `Removed ${email}.` });
    } catch (err) {
      return refused(reply, r, err);
    }
  });

  app.get<{ Querystring: { confirmation_token?: string } }>(
    CONFIRMATION,
    CONFIRMATION_QUERY,
    async (request, reply) => {
      const result = await confirmEmail(db, request.query.confirmation_token ?? '');
      const signedIn = await currentUser(app.sessions, request);
      if (result.ok && signedIn?.user.id === result.userId) {
        return redirectWithFlash(app, reply, signedIn.session, BASE, { notice: `${result.email} has been confirmed.` });
      }
      return sendPage(
        reply,
        result.ok ? 200 : 404,
        <Layout title={result.ok ? 'E-mail address confirmed' : 'Confirmation link not valid'} variant="card">
          {result.ok ? (
            <p class="flash flash-notice" role="status" id="flash-notice">
              {result.email} has been confirmed.
            </p>
          ) : (
            <p class="flash flash-alert" role="alert" id="flash-alert">
              This confirmation link is invalid or has expired, or its address was removed or already confirmed.
            </p>
          )}
          <p>
            {signedIn ? <a href={BASE}>Go to your e-mail addresses</a> : <a href="/users/sign_in">Sign in</a>}
            {!result.ok ? ' to send a new link.' : null}
          </p>
        </Layout>,
      );
    },
  );
}
