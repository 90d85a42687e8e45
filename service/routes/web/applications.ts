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
import { currentUser, requireSignIn } from './current-user';
import { csrfField, csrfRejected, html, redirect, sendPage, type SafeHtml } from '../../pages/html';

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
    const shown: SafeHtml | string = opts.shown
      ? html`<section id="new-secret"><h2>Application: ${opts.shown.application.name}</h2>
<p>Application ID</p><p class="secret" id="application-id">${opts.shown.application.uid}</p>
<p>Secret (shown only once: copy it now)</p><p class="secret" id="application-secret">${opts.shown.secret}</p>
<p>Callback URL</p><p class="secret">${opts.shown.application.redirect_uris.join('\n')}</p></section>`
      : '';
    return sendPage(
      reply,
      opts.status ?? 200,
      'Applications',
      html`${shown}
<h2>Add new application</h2>
${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
<form method="post" action="${BASE}">
${csrfField(token)}
<label for="app_name">Name</label>
<input type="text" id="app_name" name="${F}[name]" value="${values.name}" required maxlength="255">
<label for="app_redirect_uri">Redirect URI (one per line)</label>
<textarea id="app_redirect_uri" name="${F}[redirect_uri]" rows="3" required>${values.redirectUri}</textarea>
<label><input type="checkbox" name="${F}[confidential]" value="1"${values.confidential ? html` checked` : ''}> Confidential (the application can keep its secret; uncheck for native and single-page apps, which must use PKCE)</label>
<fieldset><legend>Scopes</legend>
${ALL_SCOPES.map(
  (s) =>
    html`<label><input type="checkbox" name="${F}[scopes][]" value="${s}"${values.scopes.includes(s) ? html` checked` : ''}> <strong>${s}</strong>: ${SCOPE_DESCRIPTIONS[s]}</label>`,
)}
</fieldset>
<button type="submit">Save application</button>
</form>
<h2>Your applications (${apps.length})</h2>
<table id="applications"><tr><th>Name</th><th>Application ID</th><th>Callback URL</th><th>Scopes</th><th></th></tr>
${apps.map(
  (
    a,
  ) => html`<tr><td>${a.name}</td><td><code>${a.uid}</code></td><td>${a.redirect_uris.join(' ')}</td><td>${a.scopes.join(' ')}</td>
<td><form method="post" action="${BASE}/${a.uid}/renew_secret">${csrfField(token)}<button type="submit">Renew secret</button></form>
<form method="post" action="${BASE}/${a.uid}/delete">${csrfField(token)}<button type="submit">Destroy</button></form></td></tr>`,
)}
</table>`,
      user.username,
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
