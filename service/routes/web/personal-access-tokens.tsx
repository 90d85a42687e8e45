// /-/user_settings/personal_access_tokens: the signed-in user creates (name, scopes, expiry
// within a year), lists (20 a page, expiry in words, expiring soon highlighted) and revokes their
// personal access tokens. The form offers only the scopes this person's token may hold, and the
// rules are the domain's (createPersonalAccessToken, selfService): a refusal is shown at the field it
// names. A new token is shown once, on the page after the redirect (sealed in the session flash),
// with a copy button. Revoke goes through a confirm page.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import { DomainError } from '../../domain/errors';
import {
  createPersonalAccessToken,
  defaultTokenExpiry,
  findOwnActivePersonalAccessToken,
  listPersonalAccessTokensPage,
  MAX_SELF_SERVICE_LIFETIME_DAYS,
  revokePersonalAccessToken,
  selfServiceExpiryRange,
} from '../../domain/personal-access-tokens';
import { personalAccessTokenScopesFor, SCOPE_DESCRIPTIONS, type Scope } from '../../domain/scopes';
import { formRouteOptions } from '../../http/form-body';
import { stringParam } from '../../shared/params';
import {
  Button,
  CheckboxGroup,
  CsrfField,
  type FieldError,
  fieldErrorOf,
  type Flash,
  LinkButton,
  ShownOnce,
  TextField,
  Time,
} from '../../pages/components';
import { CopyButton } from '../../pages/copy-button';
import * as React from '../../pages/jsx';
import { pageNumberOf, pageWindow, Pagination } from '../../pages/pagination';
import { Expiry } from '../../pages/relative-date';
import { ConfirmPage, Layout, sendPage } from '../../pages/layout';
import {
  type AccountRequest,
  accountGuardFor,
  auditActor,
  mailSettingsOf,
  pendingFlash,
  type RejectedForm,
  redirectRejected,
  redirectWithFlash,
} from './account';

const BASE = '/-/user_settings/personal_access_tokens';
const F = 'personal_access_token';
const CREATE_FORM = formRouteOptions({ strings: [`${F}[name]`, `${F}[expires_at]`], arrays: [`${F}[scopes][]`] });
const idParams = {
  params: { type: 'object', properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' } }, required: ['id'] },
} as const;
const REVOKE_FORM = formRouteOptions({ strings: [] }, idParams);

interface FormValues {
  name: string;
  expiresAt: string;
  scopes: string[];
}

interface ShownToken {
  name: string;
  token: string;
}

/**
 * The form's inputs by the domain's field names, and what each says when the domain refuses it
 * (GOV.UK style: what to do, not which rule failed; the rules are the domain's).
 */
function formError(err: DomainError, expiresAt: string): FieldError {
  const { earliest, latest } = selfServiceExpiryRange();
  // Out of the range: which end it missed, in words (the range itself is the domain's).
  const outOfRange =
    expiresAt < earliest
      ? `Expiration date must be in the future, from ${earliest}`
      : `Expiration date must be no later than ${latest}, ${MAX_SELF_SERVICE_LIFETIME_DAYS} days from today`;
  return fieldErrorOf(
    err,
    {
      name: {
        id: 'token_name',
        message: {
          blank: 'Enter a token name',
          too_long: 'Token name must be 255 characters or fewer',
          otherwise: 'Enter a token name of 255 characters or fewer',
        },
      },
      expires_at: {
        id: 'token_expires_at',
        message: {
          blank: 'Enter an expiration date',
          not_a_date: 'Expiration date must be a real date',
          out_of_range: outOfRange,
          otherwise: `Expiration date must be between ${earliest} and ${latest}`,
        },
      },
      scopes: {
        id: 'token_scopes',
        message: {
          blank: 'Select at least one scope',
          otherwise: 'Select scopes from the list',
        },
      },
    },
    'The token could not be created',
  );
}

export async function personalAccessTokenRoutes(app: FastifyInstance, context: AppContext) {
  const { db } = context;
  async function page(
    reply: FastifyReply,
    { user, session, csrf }: AccountRequest,
    opts: { status?: number; flash?: Flash; page?: number } = {},
  ) {
    const pending = opts.flash
      ? { flash: opts.flash }
      : await pendingFlash<ShownToken | RejectedForm<FormValues>>(app, session, BASE);
    const shown = pending.secret && 'token' in pending.secret ? pending.secret : undefined;
    const rejected = pending.secret && 'rejected' in pending.secret ? pending.secret.rejected : undefined;
    const pageNumber = opts.page ?? 1;
    const tokens = await listPersonalAccessTokensPage(db, {
      userId: user.id,
      state: 'active',
      sort: 'created_desc',
      ...pageWindow(pageNumber),
    });
    const values = rejected?.values ?? { name: '', expiresAt: defaultTokenExpiry(), scopes: [] };
    const errors = rejected?.errors;
    const { earliest, latest } = selfServiceExpiryRange();
    const err = (field: string) => errors?.find((e) => e.field === field)?.message;
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Personal access tokens"
        user={user}
        csrf={csrf}
        section={BASE}
        flash={pending.flash}
        errors={errors}
        lead="Use a personal access token instead of your password with the API and with Git clients. Two-factor users need one."
      >
        {shown ? (
          <ShownOnce id="created-token" title="Your new personal access token">
            <p>
              Copy <strong>{shown.name}</strong> now: it is shown only once.
            </p>
            <div class="copyable">
              <code class="secret" id="created-personal-access-token">
                {shown.token}
              </code>
              <CopyButton target="created-personal-access-token" label="Copy the personal access token" />
            </div>
          </ShownOnce>
        ) : null}
        <section class="panel" aria-labelledby="add-token">
          <h2 id="add-token">Add a personal access token</h2>
          <form method="post" action={BASE}>
            <CsrfField token={csrf} />
            <TextField
              id="token_name"
              name={`${F}[name]`}
              label="Token name"
              hint="For example, the application using the token or its purpose."
              value={values.name}
              error={err('token_name')}
              required
              maxlength={255}
            />
            <TextField
              id="token_expires_at"
              name={`${F}[expires_at]`}
              type="date"
              label="Expiration date"
              hint={`From tomorrow to at most ${MAX_SELF_SERVICE_LIFETIME_DAYS} days from today (${latest}).`}
              value={values.expiresAt}
              min={earliest}
              max={latest}
              error={err('token_expires_at')}
              required
            />
            <CheckboxGroup
              id="token_scopes"
              name={`${F}[scopes][]`}
              legend="Scopes"
              options={personalAccessTokenScopesFor(user).map((s) => ({
                value: s,
                label: s,
                hint: SCOPE_DESCRIPTIONS[s as Scope],
              }))}
              checked={values.scopes}
              error={err('token_scopes')}
            />
            <div class="actions">
              <Button>Create personal access token</Button>
            </div>
          </form>
        </section>
        <h2 id="active-tokens">Active personal access tokens ({tokens.total})</h2>
        {tokens.total === 0 ? (
          <p class="muted">This user has no active personal access tokens.</p>
        ) : (
          <table class="list" id="tokens" aria-labelledby="active-tokens">
            <thead>
              <tr>
                <th scope="col">Token name</th>
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {tokens.rows.map((t) => (
                <tr>
                  <td data-label="Token name">{t.name}</td>
                  <td data-label="Scopes">
                    {t.scopes.map((s) => (
                      <span class="badge">{s}</span>
                    ))}
                  </td>
                  <td data-label="Created">
                    <Time value={t.created_at} />
                  </td>
                  <td data-label="Last used">{t.last_used_at ? <Time value={t.last_used_at} /> : 'Never'}</td>
                  <td data-label="Expires">
                    <Expiry date={t.expires_at} />
                  </td>
                  <td class="actions-cell">
                    <LinkButton href={`${BASE}/${t.id}/revoke`} variant="danger" small>
                      Revoke
                    </LinkButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Pagination path={BASE} page={pageNumber} total={tokens.total} label="Personal access tokens pages" />
      </Layout>,
    );
  }

  const guard = accountGuardFor(app);
  const notFound = (reply: FastifyReply, r: AccountRequest) =>
    page(reply, r, { status: 404, flash: { alert: 'That personal access token was not found.' } });

  app.get(BASE, async (request, reply) => {
    const r = await guard(request, reply);
    return r ? page(reply, r, { page: pageNumberOf(request.query) }) : reply;
  });

  app.post(BASE, CREATE_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const rawScopes = body[`${F}[scopes][]`];
    const values: FormValues = {
      name: (stringParam(body, `${F}[name]`) ?? '').trim(),
      expiresAt: (stringParam(body, `${F}[expires_at]`) ?? '').trim(),
      scopes: Array.isArray(rawScopes) ? rawScopes.filter((s): s is string => typeof s === 'string') : [],
    };
    try {
      const { token } = await createPersonalAccessToken(db, {
        username: r.user.username,
        name: values.name,
        scopes: values.scopes,
        expiresAt: values.expiresAt,
        selfService: true,
        actor: auditActor(r.user, request).actor,
        mail: mailSettingsOf(context.config),
      });
      return redirectWithFlash(
        app,
        reply,
        r.session,
        BASE,
        { notice: 'Your new personal access token has been created.' },
        { name: values.name, token } satisfies ShownToken,
      );
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'invalid')
        return redirectRejected(app, reply, r.session, BASE, values, [formError(err, values.expiresAt)]);
      throw err;
    }
  });

  app.get<{ Params: { id: string } }>(`${BASE}/:id/revoke`, { schema: idParams }, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const token = await findOwnActivePersonalAccessToken(db, r.user.id, Number(request.params.id));
    if (!token) return notFound(reply, r);
    return sendPage(
      reply,
      200,
      <ConfirmPage
        title="Revoke personal access token"
        user={r.user}
        csrf={r.csrf}
        section={BASE}
        action={`${BASE}/${token.id}/revoke`}
        confirmLabel="Revoke"
      >
        <p>
          Revoke <strong>{token.name}</strong>? Anything using it loses access at once. This cannot be undone.
        </p>
      </ConfirmPage>,
    );
  });

  app.post<{ Params: { id: string } }>(`${BASE}/:id/revoke`, REVOKE_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const token = await findOwnActivePersonalAccessToken(db, r.user.id, Number(request.params.id));
    if (!token) return notFound(reply, r);
    await revokePersonalAccessToken(db, token.id, auditActor(r.user, request).actor);
    return redirectWithFlash(app, reply, r.session, BASE, { notice: `Revoked personal access token ${token.name}.` });
  });
}
