// /-/user_settings/personal_access_tokens: the signed-in user creates (name, scopes, expiry
// within a year), lists and revokes their personal access tokens. A new token is shown once,
// on the page after the redirect (sealed in the session flash). Revoke goes through a confirm page.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import { DomainError } from '../../domain/errors';
import {
  createPersonalAccessToken,
  defaultTokenExpiry,
  findOwnActivePersonalAccessToken,
  listActivePersonalAccessTokens,
  revokePersonalAccessToken,
  selfServiceExpiryProblem,
} from '../../domain/personal-access-tokens';
import { ALL_SCOPES, isScope, SCOPE_DESCRIPTIONS, userGrantableScopes } from '../../domain/scopes';
import { formRouteOptions } from '../../http/form-body';
import { stringParam } from '../../shared/params';
import {
  Button,
  CheckboxGroup,
  CsrfField,
  type FieldError,
  fieldErrorOf,
  type Flash,
  formatDate,
  LinkButton,
  ShownOnce,
  TextField,
  Time,
} from '../../pages/components';
import * as React from '../../pages/jsx';
import { ConfirmPage, Layout, sendPage } from '../../pages/layout';
import {
  type AccountRequest,
  accountGuardFor,
  auditActor,
  mailSettingsOf,
  pendingFlash,
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

const daysFromNow = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

export async function personalAccessTokenRoutes(app: FastifyInstance, context: AppContext) {
  const { db } = context;
  async function page(
    reply: FastifyReply,
    { user, session, csrf }: AccountRequest,
    opts: { status?: number; errors?: FieldError[]; values?: FormValues; flash?: Flash } = {},
  ) {
    const pending = opts.flash ? { flash: opts.flash } : await pendingFlash<ShownToken>(app, session, BASE);
    const tokens = await listActivePersonalAccessTokens(db, user.id);
    const values = opts.values ?? { name: '', expiresAt: defaultTokenExpiry(), scopes: [] };
    const err = (field: string) => opts.errors?.find((e) => e.field === field)?.message;
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Personal access tokens"
        user={user}
        csrf={csrf}
        section={BASE}
        flash={pending.flash}
        errors={opts.errors}
        lead="Use a personal access token instead of your password with the API and with Git clients. Two-factor users need one."
      >
        {pending.secret ? (
          <ShownOnce id="created-token" title="Your new personal access token">
            <p>
              Copy <strong>{pending.secret.name}</strong> now: it is shown only once.
            </p>
            <code class="secret" id="created-personal-access-token">
              {pending.secret.token}
            </code>
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
              hint="At most 365 days from today."
              value={values.expiresAt}
              min={daysFromNow(1)}
              max={daysFromNow(365)}
              error={err('token_expires_at')}
              required
            />
            <CheckboxGroup
              id="token_scopes"
              name={`${F}[scopes][]`}
              legend="Scopes"
              options={userGrantableScopes(ALL_SCOPES).map((s) => ({
                value: s,
                label: s,
                hint: SCOPE_DESCRIPTIONS[s],
              }))}
              checked={values.scopes}
              error={err('token_scopes')}
            />
            <div class="actions">
              <Button>Create personal access token</Button>
            </div>
          </form>
        </section>
        <h2 id="active-tokens">Active personal access tokens ({tokens.length})</h2>
        {tokens.length === 0 ? (
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
              {tokens.map((t) => (
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
                  <td data-label="Expires">{formatDate(t.expires_at) || 'Never'}</td>
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
      </Layout>,
    );
  }

  const guard = accountGuardFor(app);
  const notFound = (reply: FastifyReply, r: AccountRequest) =>
    page(reply, r, { status: 404, flash: { alert: 'That personal access token was not found.' } });

  app.get(BASE, async (request, reply) => {
    const r = await guard(request, reply);
    return r ? page(reply, r) : reply;
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
    const errors: FieldError[] = [];
    if (!values.name) errors.push({ field: 'token_name', message: 'Token name can’t be blank.' });
    else if (values.name.length > 255)
      errors.push({ field: 'token_name', message: 'Token name is too long (maximum is 255 characters).' });
    const expiryProblem = values.expiresAt
      ? selfServiceExpiryProblem(values.expiresAt)
      : 'Expiration date can’t be blank.';
    if (expiryProblem) errors.push({ field: 'token_expires_at', message: expiryProblem });
    const unknown = values.scopes.filter((s) => !isScope(s));
    if (values.scopes.length === 0) errors.push({ field: 'token_scopes', message: 'Select at least one scope.' });
    else if (unknown.length) errors.push({ field: 'token_scopes', message: `Unknown scope: ${unknown.join(', ')}.` });
    if (errors.length) return page(reply, r, { status: 422, errors, values });
    try {
      const { token } = await createPersonalAccessToken(db, {
        username: r.user.username,
        name: values.name,
        scopes: values.scopes,
        expiresAt: values.expiresAt,
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
        return page(reply, r, {
          status: 422,
          errors: [fieldErrorOf(err, { name: 'token_name', expires_at: 'token_expires_at', scopes: 'token_scopes' })],
          values,
        });
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
