// /-/user_settings/active_sessions (GitLab's path): the signed-in person's sessions — browser and
// OS from the User-Agent, address, signed in, last seen, "This session" — and revoking one, or
// every other one, each through a confirm page (CSRF-protected POST, then a redirect). An ended
// session's applications get back-channel logout tokens (domain/backchannel-logout.ts).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import { DomainError } from '../../domain/errors';
import {
  findUserSession,
  listUserSessionsPage,
  revokeOtherUserSessions,
  revokeUserSession,
} from '../../domain/sessions';
import { parseUserAgent } from '../../domain/user-agent';
import { formRouteOptions } from '../../http/form-body';
import { type Flash, LinkButton, Time } from '../../pages/components';
import * as React from '../../pages/jsx';
import { ConfirmPage, Layout, sendPage } from '../../pages/layout';
import { pageNumberOf, pageWindow, Pagination } from '../../pages/pagination';
import { type AccountRequest, accountGuardFor, auditActor, pendingFlash, redirectWithFlash } from './account';

const BASE = '/-/user_settings/active_sessions';
const REVOKE_OTHERS = `${BASE}/revoke_others`;
const idParams = {
  params: { type: 'object', properties: { id: { type: 'string', pattern: '^[0-9a-f]{32}$' } }, required: ['id'] },
} as const;
const REVOKE_FORM = formRouteOptions({ strings: [] }, idParams);
const REVOKE_OTHERS_FORM = formRouteOptions({ strings: [] });

const describe = (userAgent: string | null) => {
  const { browser, os } = parseUserAgent(userAgent);
  return `${browser} on ${os}`;
};

export async function activeSessionRoutes(app: FastifyInstance, { db }: AppContext) {
  const guard = accountGuardFor(app);

  async function page(
    reply: FastifyReply,
    { user, session, csrf }: AccountRequest,
    opts: { status?: number; flash?: Flash; page?: number } = {},
  ) {
    const pending = opts.flash ? { flash: opts.flash } : await pendingFlash(app, session, BASE);
    const current = session.data.sid;
    const pageNumber = opts.page ?? 1;
    const sessions = await listUserSessionsPage(db, user.id, pageWindow(pageNumber));
    // This session is one of them (it is live and has a sid), on whichever page.
    const others = sessions.total - 1;
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Active sessions"
        user={user}
        csrf={csrf}
        section={BASE}
        flash={pending.flash}
        lead="Where you are signed in to Lanyard. Revoking a session signs it out, and signs it out of the applications it signed in to."
      >
        <table class="list" id="sessions" aria-label="Active sessions">
          <thead>
            <tr>
              <th scope="col">Browser</th>
              <th scope="col">Address</th>
              <th scope="col">Signed in</th>
              <th scope="col">Last seen</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sessions.rows.map((s) => (
              <tr id={`session-${s.id}`}>
                <td data-label="Browser">
                  {describe(s.user_agent)}
                  {s.id === current ? (
                    <>
                      {' '}
                      <span class="badge">This session</span>
                    </>
                  ) : null}
                </td>
                <td data-label="Address" class="address">
                  {s.ip_address ?? 'Unknown'}
                </td>
                <td data-label="Signed in">
                  <Time value={s.created_at} />
                </td>
                <td data-label="Last seen">
                  <Time value={s.last_seen_at} />
                </td>
                <td class="actions-cell">
                  {s.id === current ? null : (
                    <LinkButton href={`${BASE}/${s.id}/revoke`} variant="danger" small>
                      Revoke
                    </LinkButton>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <Pagination path={BASE} page={pageNumber} total={sessions.total} label="Active sessions pages" />
        {others > 0 ? (
          <div class="actions">
            <LinkButton href={REVOKE_OTHERS} variant="danger">
              Revoke all other sessions
            </LinkButton>
          </div>
        ) : null}
      </Layout>,
    );
  }

  const notFound = (reply: FastifyReply, r: AccountRequest) =>
    page(reply, r, { status: 404, flash: { alert: 'That session was not found.' } });

  app.get(BASE, async (request, reply) => {
    const r = await guard(request, reply);
    return r ? page(reply, r, { page: pageNumberOf(request.query) }) : reply;
  });

  app.get(REVOKE_OTHERS, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    return sendPage(
      reply,
      200,
      <ConfirmPage
        title="Revoke all other sessions"
        user={r.user}
        csrf={r.csrf}
        section={BASE}
        action={REVOKE_OTHERS}
        confirmLabel="Revoke all other sessions"
      >
        <p>Sign out every other browser and device signed in as {r.user.username}? This session stays signed in.</p>
      </ConfirmPage>,
    );
  });

  app.post(REVOKE_OTHERS, REVOKE_OTHERS_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const n = await revokeOtherUserSessions(db, r.user.id, auditActor(r.user, request).actor, r.session.data.sid);
    return redirectWithFlash(app, reply, r.session, BASE, {
      notice: n === 1 ? 'Revoked 1 other session.' : `Revoked ${n} other sessions.`,
    });
  });

  app.get<{ Params: { id: string } }>(`${BASE}/:id/revoke`, { schema: idParams }, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const target = await findUserSession(db, r.user.id, request.params.id);
    if (!target || target.id === r.session.data.sid) return notFound(reply, r);
    return sendPage(
      reply,
      200,
      <ConfirmPage
        title="Revoke session"
        user={r.user}
        csrf={r.csrf}
        section={BASE}
        action={`${BASE}/${target.id}/revoke`}
        confirmLabel="Revoke"
      >
        <p>
          Sign out <strong>{describe(target.user_agent)}</strong>
          {target.ip_address ? ` at ${target.ip_address}` : ''}?
        </p>
      </ConfirmPage>,
    );
  });

  app.post<{ Params: { id: string } }>(`${BASE}/:id/revoke`, REVOKE_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    // This session is ended by signing out, not from this list.
    if (request.params.id === r.session.data.sid) return notFound(reply, r);
    try {
      await revokeUserSession(db, r.user.id, request.params.id, auditActor(r.user, request).actor);
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'not_found') return notFound(reply, r);
      throw err;
    }
    return redirectWithFlash(app, reply, r.session, BASE, { notice: 'The session was revoked.' });
  });
}
