// /profile/applications (also /-/user_settings/applications): the signed-in user's own OAuth
// applications — register, list, renew the secret, delete — and the applications they authorized,
// with revoke. Every POST answers 303 (post/redirect/get); a new secret travels to the next page
// sealed in the session flash (pages/flash.ts) and is shown once. Destroy, Renew and Revoke go
// through a confirm page.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import type { User } from '../../db/schema';
import {
  deleteApplication,
  findApplicationByUid,
  listApplications,
  registerApplication,
  rotateApplicationSecret,
} from '../../domain/applications';
import { listAuthorizedApplications, revokeAuthorizedApplication } from '../../domain/authorized-applications';
import { DomainError } from '../../domain/errors';
import { ALL_SCOPES, SCOPE_DESCRIPTIONS } from '../../domain/scopes';
import { formRouteOptions } from '../../http/form-body';
import { parseBoolean } from '../../domain/booleans';
import { stringParam } from '../../shared/params';
import {
  Button,
  Checkbox,
  CheckboxGroup,
  CsrfField,
  type FieldError,
  fieldErrorOf,
  type Flash,
  LinkButton,
  ShownOnce,
  TextArea,
  TextField,
  Time,
} from '../../pages/components';
import * as React from '../../pages/jsx';
import { ConfirmPage, Layout, sendPage } from '../../pages/layout';
import { type AccountRequest, accountGuardFor, auditActor, pendingFlash, redirectWithFlash } from './account';

const BASE = '/profile/applications';
/** The domain's owner-scoped writes say "not found" for someone else's application, as for a gone one. */
const isNotFound = (err: unknown) => err instanceof DomainError && err.kind === 'not_found';
const ALIAS = '/-/user_settings/applications';
const F = 'doorkeeper_application';

interface FormValues {
  name: string;
  redirectUri: string;
  postLogoutRedirectUri: string;
  allowedResources: string;
  scopes: string[];
  confidential: boolean;
}

/** What the page after a create or renew shows once. */
interface ShownSecret {
  name: string;
  uid: string;
  secret: string;
  redirectUris: string[];
}

const uidParams = {
  params: { type: 'object', properties: { uid: { type: 'string', pattern: '^[0-9a-f]{64}$' } }, required: ['uid'] },
} as const;

/** The registration form; scopes as checkboxes (`[scopes][]`) or one space-separated string. */
const REGISTER_FORM = formRouteOptions({
  strings: [
    `${F}[name]`,
    `${F}[redirect_uri]`,
    `${F}[post_logout_redirect_uri]`,
    `${F}[allowed_resources]`,
    `${F}[confidential]`,
    `${F}[scopes]`,
  ],
  arrays: [`${F}[scopes][]`],
});
/** Renew secret, destroy, revoke: a button and the CSRF token. */
const BUTTON_FORM = formRouteOptions({ strings: [] }, uidParams);

export async function applicationRoutes(app: FastifyInstance, context: AppContext) {
  const { db } = context;
  const guard = accountGuardFor(app);

  async function listPage(
    reply: FastifyReply,
    { user, session, csrf }: AccountRequest,
    opts: { status?: number; errors?: FieldError[]; values?: FormValues; flash?: Flash } = {},
  ) {
    const pending = opts.flash ? { flash: opts.flash } : await pendingFlash<ShownSecret>(app, session, BASE);
    const shown = pending.secret;
    const apps = await listApplications(db, user.id);
    const authorized = await listAuthorizedApplications(db, user.id);
    const values = opts.values ?? {
      name: '',
      redirectUri: '',
      postLogoutRedirectUri: '',
      allowedResources: '',
      scopes: [],
      confidential: true,
    };
    const fieldError = (field: string) => opts.errors?.find((e) => e.field === field)?.message;
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Applications"
        user={user}
        csrf={csrf}
        section={BASE}
        flash={pending.flash}
        errors={opts.errors}
        lead="Applications you registered to use Lanyard as an OAuth provider, and applications you allowed to use your account."
      >
        {shown ? (
          <ShownOnce id="new-secret" title={`Application: ${shown.name}`}>
            <p>Copy the secret now: it is shown only once.</p>
            <h3>Application ID</h3>
            <code class="secret" id="application-id">
              {shown.uid}
            </code>
            <h3>Secret</h3>
            <code class="secret" id="application-secret">
              {shown.secret}
            </code>
            <h3>Callback URL</h3>
            <code class="secret">{shown.redirectUris.join('\n')}</code>
          </ShownOnce>
        ) : null}
        <section class="panel" aria-labelledby="add-application">
          <h2 id="add-application">Add new application</h2>
          <form method="post" action={BASE}>
            <CsrfField token={csrf} />
            <TextField
              id="app_name"
              name={`${F}[name]`}
              label="Name"
              value={values.name}
              error={fieldError('app_name')}
              required
              maxlength={255}
            />
            <TextArea
              id="app_redirect_uri"
              name={`${F}[redirect_uri]`}
              label="Redirect URI"
              hint="One per line. Loopback URIs (127.0.0.1, [::1]) match any port."
              value={values.redirectUri}
              error={fieldError('app_redirect_uri')}
              rows={3}
              required
            />
            <TextArea
              id="app_post_logout_redirect_uri"
              name={`${F}[post_logout_redirect_uri]`}
              label="Post-logout redirect URI (optional)"
              hint="One per line. Where the application's Sign out may send people back to after /oauth/logout; matched exactly."
              value={values.postLogoutRedirectUri}
              error={fieldError('app_post_logout_redirect_uri')}
              rows={2}
            />
            <TextArea
              id="app_allowed_resources"
              name={`${F}[allowed_resources]`}
              label="Allowed resources (optional)"
              hint="One per line. The resource servers (RFC 8707 resource URIs, such as an MCP server's) its tokens may be for. Empty: any https URI."
              value={values.allowedResources}
              error={fieldError('app_allowed_resources')}
              rows={2}
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
              error={fieldError('app_scopes')}
            />
            <div class="actions">
              <Button>Save application</Button>
            </div>
          </form>
        </section>
        <h2 id="your-applications">Your applications ({apps.length})</h2>
        {apps.length === 0 ? (
          <p class="muted">You have not registered any applications.</p>
        ) : (
          <table class="list" id="applications" aria-labelledby="your-applications">
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
                  <td data-label="Callback URL" class="url">
                    {a.redirect_uris.join(' ')}
                  </td>
                  <td data-label="Scopes">
                    {a.scopes.map((s) => (
                      <span class="badge">{s}</span>
                    ))}
                  </td>
                  <td class="actions-cell">
                    <LinkButton href={`${BASE}/${a.uid}/renew_secret`} small>
                      Renew secret
                    </LinkButton>{' '}
                    <LinkButton href={`${BASE}/${a.uid}/delete`} variant="danger" small>
                      Destroy
                    </LinkButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <h2 id="authorized-applications">Authorized applications ({authorized.length})</h2>
        {authorized.length === 0 ? (
          <p class="muted">You have not authorized any applications to use your account.</p>
        ) : (
          <table class="list" id="authorized" aria-labelledby="authorized-applications">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Scopes</th>
                <th scope="col">Authorized at</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {authorized.map((a) => (
                <tr>
                  <td data-label="Name">{a.name}</td>
                  <td data-label="Scopes">
                    {a.scopes.map((s) => (
                      <span class="badge">{s}</span>
                    ))}
                  </td>
                  <td data-label="Authorized at">
                    <Time value={a.authorizedAt} />
                  </td>
                  <td class="actions-cell">
                    <LinkButton href={`${BASE}/authorized/${a.uid}/revoke`} variant="danger" small>
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

  /** Someone else's (or no) application: the list again with the message, 404, nothing changed. */
  const notYours = (reply: FastifyReply, r: AccountRequest, what = 'application') =>
    listPage(reply, r, { status: 404, flash: { alert: `That ${what} was not found.` } });

  /** The confirm page of Renew secret, Destroy and Revoke. */
  const confirmPage = (
    reply: FastifyReply,
    r: AccountRequest,
    title: string,
    action: string,
    confirmLabel: string,
    message: string,
  ) =>
    sendPage(
      reply,
      200,
      <ConfirmPage title={title} user={r.user} csrf={r.csrf} section={BASE} action={action} confirmLabel={confirmLabel}>
        <p>{message}</p>
      </ConfirmPage>,
    );

  const ownApplication = async (user: User, uid: string) => {
    const found = await findApplicationByUid(db, uid);
    return found && found.owner_id === user.id ? found : undefined;
  };

  for (const path of [BASE, ALIAS]) {
    app.get(path, async (request, reply) => {
      const r = await guard(request, reply);
      return r ? listPage(reply, r) : reply;
    });
  }

  app.post(BASE, REGISTER_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const rawScopes = body[`${F}[scopes][]`] ?? body[`${F}[scopes]`];
    const values: FormValues = {
      name: stringParam(body, `${F}[name]`) ?? '',
      redirectUri: stringParam(body, `${F}[redirect_uri]`) ?? '',
      postLogoutRedirectUri: stringParam(body, `${F}[post_logout_redirect_uri]`) ?? '',
      allowedResources: stringParam(body, `${F}[allowed_resources]`) ?? '',
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
        postLogoutRedirectUris: [values.postLogoutRedirectUri],
        allowedResources: [values.allowedResources],
        scopes: values.scopes,
        confidential: values.confidential,
        ownerId: r.user.id,
        actor: auditActor(r.user, request).actor,
      });
      const shown: ShownSecret = {
        name: created.application.name,
        uid: created.application.uid,
        secret: created.secret,
        redirectUris: created.application.redirect_uris,
      };
      return redirectWithFlash(app, reply, r.session, BASE, { notice: 'The application was created.' }, shown);
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'invalid') {
        const errors = [
          fieldErrorOf(err, {
            name: 'app_name',
            redirect_uri: 'app_redirect_uri',
            post_logout_redirect_uri: 'app_post_logout_redirect_uri',
            allowed_resources: 'app_allowed_resources',
            scopes: 'app_scopes',
          }),
        ];
        return listPage(reply, r, { status: 422, errors, values });
      }
      throw err;
    }
  });

  // The confirm pages of the two owner-only actions; the owner check is the domain write's own.
  const CONFIRMS = [
    {
      action: 'renew_secret',
      title: 'Renew secret',
      confirmLabel: 'Renew secret',
      message: (name: string) => `Renew the secret of ${name}? The current secret stops working at once.`,
    },
    {
      action: 'delete',
      title: 'Destroy application',
      confirmLabel: 'Destroy',
      message: (name: string) => `Destroy ${name}? Every token issued to it stops working.`,
    },
  ] as const;
  for (const c of CONFIRMS) {
    app.get<{ Params: { uid: string } }>(`${BASE}/:uid/${c.action}`, { schema: uidParams }, async (request, reply) => {
      const r = await guard(request, reply);
      if (!r) return reply;
      const application = await ownApplication(r.user, request.params.uid);
      if (!application) return notYours(reply, r);
      return confirmPage(
        reply,
        r,
        c.title,
        `${BASE}/${application.uid}/${c.action}`,
        c.confirmLabel,
        c.message(application.name),
      );
    });
  }

  app.post<{ Params: { uid: string } }>(`${BASE}/:uid/renew_secret`, BUTTON_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    let rotated: Awaited<ReturnType<typeof rotateApplicationSecret>>;
    try {
      rotated = await rotateApplicationSecret(db, request.params.uid, auditActor(r.user, request).actor, r.user.id);
    } catch (err) {
      if (isNotFound(err)) return notYours(reply, r);
      throw err;
    }
    const { application, secret } = rotated;
    const shown: ShownSecret = {
      name: application.name,
      uid: application.uid,
      secret,
      redirectUris: application.redirect_uris,
    };
    return redirectWithFlash(app, reply, r.session, BASE, { notice: 'The secret was renewed.' }, shown);
  });

  app.post<{ Params: { uid: string } }>(`${BASE}/:uid/delete`, BUTTON_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    let deleted: Awaited<ReturnType<typeof deleteApplication>>;
    try {
      deleted = await deleteApplication(db, request.params.uid, auditActor(r.user, request).actor, r.user.id);
    } catch (err) {
      if (isNotFound(err)) return notYours(reply, r);
      throw err;
    }
    return redirectWithFlash(app, reply, r.session, BASE, { notice: `${deleted.name} was destroyed.` });
  });

  app.get<{ Params: { uid: string } }>(
    `${BASE}/authorized/:uid/revoke`,
    { schema: uidParams },
    async (request, reply) => {
      const r = await guard(request, reply);
      if (!r) return reply;
      const granted = (await listAuthorizedApplications(db, r.user.id)).find((a) => a.uid === request.params.uid);
      if (!granted) return notYours(reply, r, 'authorized application');
      return confirmPage(
        reply,
        r,
        'Revoke access',
        `${BASE}/authorized/${granted.uid}/revoke`,
        'Revoke',
        `Revoke the access of ${granted.name}? Its tokens for your account stop working, and it must ask for your consent again.`,
      );
    },
  );

  app.post<{ Params: { uid: string } }>(`${BASE}/authorized/:uid/revoke`, BUTTON_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    try {
      const { name } = await revokeAuthorizedApplication(
        db,
        r.user.id,
        request.params.uid,
        auditActor(r.user, request),
      );
      return redirectWithFlash(app, reply, r.session, BASE, { notice: `The access of ${name} was revoked.` });
    } catch (err) {
      if (isNotFound(err)) return notYours(reply, r, 'authorized application');
      throw err;
    }
  });
}
