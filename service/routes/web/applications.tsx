// /profile/applications: the signed-in user's OAuth applications — register, list, delete,
// renew the secret. A secret is shown once, in the response that created it (never stored
// in the session or anywhere else in plaintext).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import type { User } from '../../db/schema';
import {
  deleteApplication,
  listApplications,
  registerApplication,
  rotateApplicationSecret,
  type ApplicationRecord,
} from '../../domain/applications';
import { DomainError } from '../../domain/errors';
import { ALL_SCOPES, SCOPE_DESCRIPTIONS } from '../../domain/scopes';
import { formRouteOptions } from '../../http/form-body';
import { parseBoolean } from '../../domain/booleans';
import { stringParam } from '../../shared/params';
import { CSRF_FIELD } from '../../http/session';
import { csrfRejected } from '../../pages/common';
import { Button, Checkbox, CheckboxGroup, CsrfField, PostButton, TextArea, TextField } from '../../pages/components';
import * as React from '../../pages/jsx';
import { Layout, redirect, sendPage } from '../../pages/layout';
import { currentUser, requireSignIn } from './current-user';

const BASE = '/profile/applications';
const F = 'doorkeeper_application';

interface FormValues {
  name: string;
  redirectUri: string;
  scopes: string[];
  confidential: boolean;
}

const uidParams = {
  params: { type: 'object', properties: { uid: { type: 'string', pattern: '^[0-9a-f]{64}$' } }, required: ['uid'] },
} as const;

/** The registration form; scopes as checkboxes (`[scopes][]`) or one space-separated string. */
const REGISTER_FORM = formRouteOptions({
  strings: [`${F}[name]`, `${F}[redirect_uri]`, `${F}[confidential]`, `${F}[scopes]`],
  arrays: [`${F}[scopes][]`],
});
/** Renew secret, destroy: a button and the CSRF token. */
const BUTTON_FORM = formRouteOptions({ strings: [] }, uidParams);

export async function applicationRoutes(app: FastifyInstance, { db }: AppContext) {
  const sessions = app.sessions;

  /** The signed-in user and a verified CSRF token for posts; otherwise the reply is sent. */
  async function guard(request: FastifyRequest, reply: FastifyReply): Promise<User | undefined> {
    const user = await currentUser(app, db, request);
    if (!user) {
      await requireSignIn(app, request, reply);
      return undefined;
    }
    if (request.method === 'POST') {
      const body = (request.body ?? {}) as Record<string, unknown>;
      if (!(await sessions.verifyCsrf(await sessions.read(request), body[CSRF_FIELD]))) {
        await csrfRejected(reply);
        return undefined;
      }
    }
    return user;
  }

  async function listPage(
    request: FastifyRequest,
    reply: FastifyReply,
    user: User,
    opts: {
      status?: number;
      error?: string;
      values?: FormValues;
      shown?: { application: ApplicationRecord; secret: string };
    } = {},
  ) {
    const token = await sessions.csrfToken((await sessions.read(request))!);
    const apps = await listApplications(db, user.id);
    const values = opts.values ?? { name: '', redirectUri: '', scopes: [], confidential: true };
    const shown = opts.shown;
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Applications"
        user={user}
        csrf={token}
        section="/profile/applications"
        errors={opts.error ? [{ field: 'app_name', message: opts.error }] : undefined}
      >
        {shown ? (
          <section class="panel" id="new-secret" aria-labelledby="new-secret-title">
            <h2 id="new-secret-title">Application: {shown.application.name}</h2>
            <p>Copy the secret now: it is shown only once.</p>
            <h3>Application ID</h3>
            <code class="secret" id="application-id">
              {shown.application.uid}
            </code>
            <h3>Secret</h3>
            <code class="secret" id="application-secret">
              {shown.secret}
            </code>
            <h3>Callback URL</h3>
            <code class="secret">{shown.application.redirect_uris.join('\n')}</code>
          </section>
        ) : null}
        <section class="panel" aria-labelledby="add-application">
          <h2 id="add-application">Add new application</h2>
          <form method="post" action={BASE}>
            <CsrfField token={token} />
            <TextField id="app_name" name={`${F}[name]`} label="Name" value={values.name} required maxlength={255} />
            <TextArea
              id="app_redirect_uri"
              name={`${F}[redirect_uri]`}
              label="Redirect URI"
              hint="One per line."
              value={values.redirectUri}
              rows={3}
              required
            />
            <Checkbox
              id="app_confidential"
              name={`${F}[confidential]`}
              label="Confidential"
              hint="The application can keep its secret. Uncheck for native and single-page apps, which must use PKCE."
              checked={values.confidential}
            />
            <CheckboxGroup
              id="app_scopes"
              name={`${F}[scopes][]`}
              legend="Scopes"
              options={ALL_SCOPES.map((s) => ({ value: s, label: s, hint: SCOPE_DESCRIPTIONS[s] }))}
              checked={values.scopes}
            />
            <div class="actions">
              <Button>Save application</Button>
            </div>
          </form>
        </section>
        <h2>Your applications ({apps.length})</h2>
        <div class="table-wrap">
          <table class="list" id="applications">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Application ID</th>
                <th scope="col">Callback URL</th>
                <th scope="col">Scopes</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {apps.map((a) => (
                <tr>
                  <td data-label="Name">{a.name}</td>
                  <td data-label="Application ID">
                    <code>{a.uid}</code>
                  </td>
                  <td data-label="Callback URL">{a.redirect_uris.join(' ')}</td>
                  <td data-label="Scopes">{a.scopes.join(' ')}</td>
                  <td class="actions-cell">
                    <PostButton action={`${BASE}/${a.uid}/renew_secret`} csrf={token} variant="secondary" small>
                      Renew secret
                    </PostButton>{' '}
                    <PostButton action={`${BASE}/${a.uid}/delete`} csrf={token} variant="danger" small>
                      Destroy
                    </PostButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Layout>,
    );
  }

  app.get(BASE, async (request, reply) => {
    const user = await guard(request, reply);
    if (!user) return reply;
    return listPage(request, reply, user);
  });

  app.post(BASE, REGISTER_FORM, async (request, reply) => {
    const user = await guard(request, reply);
    if (!user) return reply;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const rawScopes = body[`${F}[scopes][]`] ?? body[`${F}[scopes]`];
    const values: FormValues = {
      name: stringParam(body, `${F}[name]`) ?? '',
      redirectUri: stringParam(body, `${F}[redirect_uri]`) ?? '',
      scopes: (Array.isArray(rawScopes)
        ? rawScopes
        : typeof rawScopes === 'string'
          ? rawScopes.split(/\s+/)
          : []
      ).filter((s): s is string => typeof s === 'string' && s !== ''),
      confidential: parseBoolean(body[`${F}[confidential]`]) ?? false,
    };
    try {
      const created = await registerApplication(db, {
        name: values.name,
        redirectUris: [values.redirectUri],
        scopes: values.scopes,
        confidential: values.confidential,
        ownerId: user.id,
        actor: `user:${user.username}`,
      });
      return listPage(request, reply, user, { status: 201, shown: created });
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'invalid')
        return listPage(request, reply, user, { status: 422, error: err.message, values });
      throw err;
    }
  });

  app.post<{ Params: { uid: string } }>(`${BASE}/:uid/renew_secret`, BUTTON_FORM, async (request, reply) => {
    const user = await guard(request, reply);
    if (!user) return reply;
    const rotated = await rotateApplicationSecret(db, request.params.uid, `user:${user.username}`, user.id);
    return listPage(request, reply, user, { shown: rotated });
  });

  app.post<{ Params: { uid: string } }>(`${BASE}/:uid/delete`, BUTTON_FORM, async (request, reply) => {
    const user = await guard(request, reply);
    if (!user) return reply;
    await deleteApplication(db, request.params.uid, `user:${user.username}`, user.id);
    return redirect(reply, BASE);
  });
}
