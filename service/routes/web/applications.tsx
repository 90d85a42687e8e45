// /profile/applications (also /-/user_settings/applications): the signed-in person's own OAuth
// applications. The list (20 a page) links to each application's page (/profile/applications/:id:
// App ID, redirect URIs, scopes; Edit, Renew secret, Destroy); "New application" has a page of its
// own. Edit keeps the App ID. Every POST answers 303 (post/redirect/get), a refused form too (its
// errors and values travel to the form's page in the flash); a new secret travels to
// the application's page sealed in the session flash (pages/flash.ts) and is shown there once.
// Renew and Destroy go through a confirm page. (Applications the person authorized:
// authorized-applications.tsx.)
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import type { User } from '../../db/schema';
import {
  type ApplicationRecord,
  deleteApplication,
  findApplicationById,
  listOwnApplicationsPage,
  registerApplication,
  rotateApplicationSecret,
  updateApplication,
} from '../../domain/applications';
import { DomainError } from '../../domain/errors';
import { formRouteOptions } from '../../http/form-body';
import {
  Button,
  CsrfField,
  type FieldError,
  type Flash,
  formatDate,
  LinkButton,
  ShownOnce,
  Time,
} from '../../pages/components';
import { CopyButton } from '../../pages/copy-button';
import * as React from '../../pages/jsx';
import { ConfirmPage, Layout, sendPage } from '../../pages/layout';
import { pageNumberOf, pageWindow, Pagination } from '../../pages/pagination';
import {
  type AccountRequest,
  accountGuardFor,
  auditActor,
  pendingFlash,
  type RejectedForm,
  redirectRejected,
  redirectWithFlash,
} from './account';
import {
  applicationFormOptions,
  ApplicationFields,
  type ApplicationFormValues,
  applicationFormError,
  applicationFormValues,
  applicationInput,
  EMPTY_APPLICATION_FORM,
  readApplicationForm,
} from './application-form';
import { AUTHORIZED_APPLICATIONS_PATH } from './authorized-applications';

const BASE = '/profile/applications';
const ALIAS = '/-/user_settings/applications';
const NEW = `${BASE}/new`;
const pathOf = (a: Pick<ApplicationRecord, 'id'>) => `${BASE}/${a.id}`;

/** The domain's owner-scoped writes say "not found" for someone else's application, as for a gone one. */
const isNotFound = (err: unknown) => err instanceof DomainError && err.kind === 'not_found';
const isInvalid = (err: unknown): err is DomainError => err instanceof DomainError && err.kind === 'invalid';

/** What the application's page shows once, after a create or a renew. */
interface ShownSecret {
  secret: string;
}

/** An application's numeric id (within PostgreSQL's integer: a longer one names nothing). */
const idParams = {
  params: { type: 'object', properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,8}$' } }, required: ['id'] },
} as const;
type IdRequest = { Params: { id: string } };
/** Renew secret, destroy: a button and the CSRF token. */
const BUTTON_FORM = formRouteOptions({ strings: [] }, idParams);
const CREATE_FORM = applicationFormOptions();
const EDIT_FORM = applicationFormOptions(idParams);

export async function applicationRoutes(app: FastifyInstance, context: AppContext) {
  const { db } = context;
  const guard = accountGuardFor(app);

  async function listPage(
    reply: FastifyReply,
    { user, session, csrf }: AccountRequest,
    opts: { status?: number; flash?: Flash; page?: number } = {},
  ) {
    const flash = opts.flash ?? (await pendingFlash(app, session, BASE)).flash;
    const page = opts.page ?? 1;
    const apps = await listOwnApplicationsPage(db, user.id, pageWindow(page));
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Applications"
        user={user}
        csrf={csrf}
        section={BASE}
        flash={flash}
        lead="Applications you registered to sign people in with Lanyard and use its API on their behalf."
      >
        <div class="page-actions">
          <h2 id="your-applications">Your applications ({apps.total})</h2>
          <LinkButton href={NEW} variant="primary">
            New application
          </LinkButton>
        </div>
        {apps.total === 0 ? (
          <p class="muted">You have not registered any applications.</p>
        ) : (
          <table class="list" id="applications" aria-labelledby="your-applications">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Scopes</th>
                <th scope="col">Confidential</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {apps.rows.map((a) => (
                <tr>
                  <td data-label="Name">
                    <a href={pathOf(a)}>{a.name}</a>
                  </td>
                  <td data-label="Scopes">
                    {a.scopes.map((s) => (
                      <span class="badge">{s}</span>
                    ))}
                  </td>
                  <td data-label="Confidential">{a.confidential ? 'Yes' : 'No'}</td>
                  <td data-label="Created">
                    <time datetime={a.created_at.toISOString()}>{formatDate(a.created_at)}</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Pagination path={BASE} page={page} total={apps.total} label="Applications pages" />
        <p id="authorized-applications" class="muted">
          Applications you allowed to use your account are under{' '}
          <a href={AUTHORIZED_APPLICATIONS_PATH}>Authorized applications</a>.
        </p>
      </Layout>,
    );
  }

  /**
   * The new and edit forms (`application` for edit), with the refusal the post before left for
   * this page, if any: then what was typed, and the errors at their fields.
   */
  async function formPage(
    reply: FastifyReply,
    { user, session, csrf }: AccountRequest,
    path: string,
    opts: { values: ApplicationFormValues; application?: ApplicationRecord },
  ) {
    const editing = opts.application;
    const { rejected } = (await pendingFlash<RejectedForm<ApplicationFormValues>>(app, session, path)).secret ?? {};
    const values = rejected?.values ?? opts.values;
    const errors: FieldError[] | undefined = rejected?.errors;
    return sendPage(
      reply,
      200,
      <Layout
        title={editing ? `Edit ${editing.name}` : 'New application'}
        user={user}
        csrf={csrf}
        section={BASE}
        errors={errors}
        lead={editing ? 'The App ID stays the same; the secret and issued tokens keep working.' : undefined}
      >
        <form method="post" action={editing ? pathOf(editing) : BASE} class="panel">
          <CsrfField token={csrf} />
          <ApplicationFields values={values} errors={errors} />
          <div class="actions">
            <Button>{editing ? 'Save changes' : 'Save application'}</Button>
            <LinkButton href={editing ? pathOf(editing) : BASE}>Cancel</LinkButton>
          </div>
        </form>
      </Layout>,
    );
  }

  async function showPage(reply: FastifyReply, { user, session, csrf }: AccountRequest, a: ApplicationRecord) {
    const pending = await pendingFlash<ShownSecret>(app, session, pathOf(a));
    return sendPage(
      reply,
      200,
      <Layout title={a.name} user={user} csrf={csrf} section={BASE} flash={pending.flash}>
        {pending.secret ? (
          <ShownOnce id="new-secret" title="Copy the secret now">
            <p>It is shown only once. If you lose it, renew the secret.</p>
            <div class="copyable">
              <code class="secret" id="application-secret">
                {pending.secret.secret}
              </code>
              <CopyButton target="application-secret" label="Copy the secret" />
            </div>
          </ShownOnce>
        ) : null}
        <dl class="details" id="application-details">
          <dt>App ID</dt>
          <dd>
            <div class="copyable">
              <code class="secret" id="application-id">
                {a.uid}
              </code>
              <CopyButton target="application-id" label="Copy the App ID" />
            </div>
          </dd>
          <dt>Secret</dt>
          <dd>{pending.secret ? 'Shown above, once.' : 'Hidden: it was shown once. Renew it to get a new one.'}</dd>
          <dt>Redirect URIs</dt>
          <dd>
            <ul class="uri-list" id="redirect-uris">
              {a.redirect_uris.map((u) => (
                <li>
                  <code>{u}</code>
                </li>
              ))}
            </ul>
          </dd>
          {a.post_logout_redirect_uris.length ? (
            <>
              <dt>Post-logout redirect URIs</dt>
              <dd>
                <ul class="uri-list" id="post-logout-redirect-uris">
                  {a.post_logout_redirect_uris.map((u) => (
                    <li>
                      <code>{u}</code>
                    </li>
                  ))}
                </ul>
              </dd>
            </>
          ) : null}
          <dt>Scopes</dt>
          <dd id="application-scopes">
            {a.scopes.map((s) => (
              <span class="badge">{s}</span>
            ))}
          </dd>
          <dt>Confidential</dt>
          <dd>{a.confidential ? 'Yes' : 'No (a public client: PKCE, no secret needed)'}</dd>
          <dt>Created</dt>
          <dd>
            <Time value={a.created_at} />
          </dd>
        </dl>
        <div class="actions">
          <LinkButton href={`${pathOf(a)}/edit`}>Edit</LinkButton>
          <LinkButton href={`${pathOf(a)}/renew_secret`}>Renew secret</LinkButton>
          <LinkButton href={`${pathOf(a)}/delete`} variant="danger">
            Destroy
          </LinkButton>
        </div>
        <p>
          <a href={BASE}>Back to your applications</a>
        </p>
      </Layout>,
    );
  }

  /** Someone else's (or no) application: the list again with the message, 404, nothing changed. */
  const notYours = (reply: FastifyReply, r: AccountRequest) =>
    listPage(reply, r, { status: 404, flash: { alert: 'That application was not found.' } });

  /** The person's own application by the id in the path, else undefined. */
  const ownApplication = async (user: User, id: string) => {
    const found = await findApplicationById(db, Number(id));
    return found && found.owner_id === user.id ? found : undefined;
  };

  for (const path of [BASE, ALIAS]) {
    app.get(path, async (request, reply) => {
      const r = await guard(request, reply);
      return r ? listPage(reply, r, { page: pageNumberOf(request.query) }) : reply;
    });
  }

  app.get(NEW, async (request, reply) => {
    const r = await guard(request, reply);
    return r ? formPage(reply, r, NEW, { values: EMPTY_APPLICATION_FORM }) : reply;
  });

  app.post(BASE, CREATE_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const values = readApplicationForm((request.body ?? {}) as Record<string, unknown>);
    try {
      const created = await registerApplication(db, {
        ...applicationInput(values),
        ownerId: r.user.id,
        actor: auditActor(r.user, request).actor,
      });
      return redirectWithFlash(
        app,
        reply,
        r.session,
        pathOf(created.application),
        { notice: 'The application was created.' },
        { secret: created.secret } satisfies ShownSecret,
      );
    } catch (err) {
      if (isInvalid(err)) return redirectRejected(app, reply, r.session, NEW, values, [applicationFormError(err)]);
      throw err;
    }
  });

  app.get<IdRequest>(`${BASE}/:id`, { schema: idParams }, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const application = await ownApplication(r.user, request.params.id);
    return application ? showPage(reply, r, application) : notYours(reply, r);
  });

  app.get<IdRequest>(`${BASE}/:id/edit`, { schema: idParams }, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const application = await ownApplication(r.user, request.params.id);
    if (!application) return notYours(reply, r);
    return formPage(reply, r, `${pathOf(application)}/edit`, {
      values: applicationFormValues(application),
      application,
    });
  });

  // Edit: the same application (App ID, secret, tokens) with new values; the owner check is the domain write's own.
  app.post<IdRequest>(`${BASE}/:id`, EDIT_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const application = await ownApplication(r.user, request.params.id);
    if (!application) return notYours(reply, r);
    const values = readApplicationForm((request.body ?? {}) as Record<string, unknown>);
    try {
      await updateApplication(
        db,
        application.uid,
        applicationInput(values),
        auditActor(r.user, request).actor,
        r.user.id,
      );
    } catch (err) {
      if (isNotFound(err)) return notYours(reply, r);
      if (isInvalid(err))
        return redirectRejected(app, reply, r.session, `${pathOf(application)}/edit`, values, [
          applicationFormError(err),
        ]);
      throw err;
    }
    return redirectWithFlash(app, reply, r.session, pathOf(application), { notice: 'The application was updated.' });
  });

  // The confirm pages of the two destructive actions.
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
      message: (name: string) => `Destroy ${name}? Every token issued to it stops working. This cannot be undone.`,
    },
  ] as const;
  for (const c of CONFIRMS) {
    app.get<IdRequest>(`${BASE}/:id/${c.action}`, { schema: idParams }, async (request, reply) => {
      const r = await guard(request, reply);
      if (!r) return reply;
      const application = await ownApplication(r.user, request.params.id);
      if (!application) return notYours(reply, r);
      return sendPage(
        reply,
        200,
        <ConfirmPage
          title={c.title}
          user={r.user}
          csrf={r.csrf}
          section={BASE}
          action={`${pathOf(application)}/${c.action}`}
          confirmLabel={c.confirmLabel}
        >
          <p>{c.message(application.name)}</p>
        </ConfirmPage>,
      );
    });
  }

  app.post<IdRequest>(`${BASE}/:id/renew_secret`, BUTTON_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const application = await ownApplication(r.user, request.params.id);
    if (!application) return notYours(reply, r);
    let secret: string;
    try {
      ({ secret } = await rotateApplicationSecret(db, application.uid, auditActor(r.user, request).actor, r.user.id));
    } catch (err) {
      if (isNotFound(err)) return notYours(reply, r);
      throw err;
    }
    return redirectWithFlash(app, reply, r.session, pathOf(application), { notice: 'The secret was renewed.' }, {
      secret,
    } satisfies ShownSecret);
  });

  app.post<IdRequest>(`${BASE}/:id/delete`, BUTTON_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const application = await ownApplication(r.user, request.params.id);
    if (!application) return notYours(reply, r);
    try {
      await deleteApplication(db, application.uid, auditActor(r.user, request).actor, r.user.id);
    } catch (err) {
      if (isNotFound(err)) return notYours(reply, r);
      throw err;
    }
    return redirectWithFlash(app, reply, r.session, BASE, { notice: `${application.name} was destroyed.` });
  });
}
