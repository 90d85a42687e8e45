// /-/user_settings/authorized_applications: the applications the signed-in person allowed to use
// their account (each holding a live grant: its scopes and when), and Revoke (every token of that
// application for this person dies; consent is asked again), through a confirm page. GitLab lists
// these under its applications page; here they have a page of their own in the settings navigation.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import {
  findAuthorizedApplication,
  listAuthorizedApplicationsPage,
  revokeAuthorizedApplication,
} from '../../domain/authorized-applications';
import { DomainError } from '../../domain/errors';
import { formRouteOptions } from '../../http/form-body';
import { type Flash, LinkButton, Time } from '../../pages/components';
import * as React from '../../pages/jsx';
import { ConfirmPage, Layout, sendPage } from '../../pages/layout';
import { pageNumberOf, pageWindow, Pagination } from '../../pages/pagination';
import { type AccountRequest, accountGuardFor, auditActor, pendingFlash, redirectWithFlash } from './account';

export const AUTHORIZED_APPLICATIONS_PATH = '/-/user_settings/authorized_applications';
const BASE = AUTHORIZED_APPLICATIONS_PATH;

const uidParams = {
  params: { type: 'object', properties: { uid: { type: 'string', pattern: '^[0-9a-f]{64}$' } }, required: ['uid'] },
} as const;
type UidRequest = { Params: { uid: string } };
const REVOKE_FORM = formRouteOptions({ strings: [] }, uidParams);

export async function authorizedApplicationRoutes(app: FastifyInstance, { db }: AppContext) {
  const guard = accountGuardFor(app);

  async function page(
    reply: FastifyReply,
    { user, session, csrf }: AccountRequest,
    status = 200,
    flash?: Flash,
    pageNumber = 1,
  ) {
    const shown = flash ?? (await pendingFlash(app, session, BASE)).flash;
    const authorized = await listAuthorizedApplicationsPage(db, user.id, pageWindow(pageNumber));
    return sendPage(
      reply,
      status,
      <Layout
        title="Authorized applications"
        user={user}
        csrf={csrf}
        section={BASE}
        flash={shown}
        lead="Applications you allowed to use your Lanyard account. Revoke one and it must ask you again."
      >
        {authorized.total === 0 ? (
          <p class="muted" id="no-authorized">
            You have not authorized any applications to use your account.
          </p>
        ) : (
          <table class="list" id="authorized" aria-label="Authorized applications">
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
              {authorized.rows.map((a) => (
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
                    <LinkButton href={`${BASE}/${a.uid}/revoke`} variant="danger" small>
                      Revoke
                    </LinkButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Pagination path={BASE} page={pageNumber} total={authorized.total} label="Authorized applications pages" />
      </Layout>,
    );
  }

  const notFound = (reply: FastifyReply, r: AccountRequest) =>
    page(reply, r, 404, { alert: 'That authorized application was not found.' });

  app.get(BASE, async (request, reply) => {
    const r = await guard(request, reply);
    return r ? page(reply, r, 200, undefined, pageNumberOf(request.query)) : reply;
  });

  app.get<UidRequest>(`${BASE}/:uid/revoke`, { schema: uidParams }, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const granted = await findAuthorizedApplication(db, r.user.id, request.params.uid);
    if (!granted) return notFound(reply, r);
    return sendPage(
      reply,
      200,
      <ConfirmPage
        title="Revoke access"
        user={r.user}
        csrf={r.csrf}
        section={BASE}
        action={`${BASE}/${granted.uid}/revoke`}
        confirmLabel="Revoke"
      >
        <p>
          Revoke the access of {granted.name}? Its tokens for your account stop working, and it must ask for your
          consent again.
        </p>
      </ConfirmPage>,
    );
  });

  app.post<UidRequest>(`${BASE}/:uid/revoke`, REVOKE_FORM, async (request, reply) => {
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
      if (err instanceof DomainError && err.kind === 'not_found') return notFound(reply, r);
      throw err;
    }
  });
}
