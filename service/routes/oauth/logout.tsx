// RP-Initiated Logout 1.0: GET|POST /oauth/logout (the discovery document's end_session_endpoint)
// and POST /oauth/logout/confirm (the person's answer to "Sign out of Lanyard?").
//
// A relying party sends the person here with `id_token_hint`, `client_id`,
// `post_logout_redirect_uri` and `state`. Bad input (a hint this issuer did not sign, one for
// another client, an unknown client, a post-logout URI the application did not register) is an
// HTML error page: no redirect, the session untouched. A valid hint for the signed-in person's
// own session signs out at once; anything else asks first (a CSRF-protected form), so that no
// other site can sign anybody out. After signing out: back to the registered URI with `state`,
// or a signed-out page.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { OAuthRoutesContext } from '.';
import { type ApplicationRecord, findApplicationByUid } from '../../domain/applications';
import { matchPostLogoutRedirectUri } from '../../domain/redirect-uris';
import { SIGNED_IN_SESSION_SECONDS } from '../../domain/sessions';
import { formRouteOptions } from '../../http/form-body';
import { CSRF_FIELD } from '../../http/session';
import { ERROR_PAGE_DESCRIPTIONS } from '../../oauth/authorize-request';
import { type IdTokenHint, verifyIdTokenHint } from '../../oauth/id-token';
import { csrfRejected, errorPage } from '../../pages/common';
import { Button, CsrfField, LinkButton } from '../../pages/components';
import { currentUser, DEFAULT_AFTER_SIGN_IN } from '../../pages/current-user';
import * as React from '../../pages/jsx';
import { Layout, redirect, seeOther, sendPage } from '../../pages/layout';
import { mergedParams, nonScalarParam, stringParam } from '../../shared/params';

export const END_SESSION_PATH = '/oauth/logout';
const CONFIRM_PATH = '/oauth/logout/confirm';
const PARAMETERS = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state'] as const;

const LOGOUT_ERRORS = {
  repeated: 'A parameter was sent more than once.',
  hint: 'The id_token_hint is not an ID token issued by this server, or it expired too long ago.',
  hintClient: 'The id_token_hint was issued to another client than client_id.',
  noClient: 'A post_logout_redirect_uri needs client_id or id_token_hint to name its application.',
  redirectUri: "The post_logout_redirect_uri is not one of the application's registered post-logout redirect URIs.",
} as const;

type LogoutRequest =
  | { ok: true; application?: ApplicationRecord; redirectUri?: string; state?: string; hint?: IdTokenHint }
  | { ok: false; error: string; description: string };

const Hidden = ({ name, value }: { name: string; value: string | undefined }) =>
  value === undefined ? React.EMPTY : <input type="hidden" name={name} value={value} />;

const CONFIRM_FORM = formRouteOptions({ strings: ['client_id', 'post_logout_redirect_uri', 'state'] });

export async function logoutRoutes(app: FastifyInstance, { db, config, signingKeys }: OAuthRoutesContext) {
  const sessions = app.sessions;

  async function check(params: Record<string, unknown>): Promise<LogoutRequest> {
    if (nonScalarParam(params, PARAMETERS))
      return { ok: false, error: 'invalid_request', description: LOGOUT_ERRORS.repeated };
    const hintText = stringParam(params, 'id_token_hint') || undefined;
    const clientId = stringParam(params, 'client_id') || undefined;
    const redirectUri = stringParam(params, 'post_logout_redirect_uri') || undefined;
    const state = stringParam(params, 'state');
    let hint: IdTokenHint | undefined;
    if (hintText) {
      // Expired hints are fine (§4), but not older than any session could be.
      hint = await verifyIdTokenHint(signingKeys, config.publicUrl, hintText, SIGNED_IN_SESSION_SECONDS);
      if (!hint) return { ok: false, error: 'invalid_request', description: LOGOUT_ERRORS.hint };
      if (clientId && !hint.aud.includes(clientId))
        return { ok: false, error: 'invalid_request', description: LOGOUT_ERRORS.hintClient };
    }
    const uid = clientId ?? (hint?.aud.length === 1 ? hint.aud[0] : undefined);
    const application = uid ? await findApplicationByUid(db, uid) : undefined;
    if (clientId && !application)
      return { ok: false, error: 'invalid_client', description: ERROR_PAGE_DESCRIPTIONS.invalid_client };
    if (redirectUri !== undefined) {
      if (!application) return { ok: false, error: 'invalid_request', description: LOGOUT_ERRORS.noClient };
      if (!matchPostLogoutRedirectUri(application.post_logout_redirect_uris, redirectUri))
        return { ok: false, error: 'invalid_redirect_uri', description: LOGOUT_ERRORS.redirectUri };
    }
    return { ok: true, application, redirectUri, state, hint };
  }

  /**
   * After signing out (or when nobody was signed in): the registered URI with state, or the
   * signed-out page — after a POST, by a 303 to GET /oauth/logout (nobody is signed in any more, so
   * it shows that page), so that reloading it or going Back never posts again.
   */
  function finish(reply: FastifyReply, req: LogoutRequest & { ok: true }, method: string) {
    if (req.redirectUri) {
      const url = new URL(req.redirectUri);
      if (req.state !== undefined) url.searchParams.append('state', req.state);
      return redirect(reply, url.toString());
    }
    if (method === 'POST') return seeOther(reply, END_SESSION_PATH);
    return sendPage(
      reply,
      200,
      <Layout title="Signed out" variant="card">
        <p id="signed-out">You have signed out of Lanyard.</p>
        <p>
          <a href="/users/sign_in">Sign in again</a>
        </p>
      </Layout>,
    );
  }

  const endSession = async (request: import('fastify').FastifyRequest, reply: FastifyReply) => {
    const req = await check(mergedParams(request));
    if (!req.ok) return errorPage(reply, 400, req.error, req.description);
    const signedIn = await currentUser(sessions, request);
    if (!signedIn) return finish(reply, req, request.method);
    const { user, session } = signedIn;
    // The hint proves the relying party knows this person's session: sign out without asking.
    const ownSession =
      req.hint !== undefined &&
      req.hint.sub === String(user.id) &&
      (req.hint.sid === undefined || req.hint.sid === session.data.sid);
    if (ownSession) {
      await sessions.destroy(request, reply, 'end_session');
      return finish(reply, req, request.method);
    }
    const token = await sessions.csrfToken(session);
    return sendPage(
      reply,
      200,
      <Layout title="Sign out of Lanyard?" variant="card" user={user} csrf={token}>
        <p>
          {req.application ? (
            <>
              <strong>{req.application.name}</strong> asks to sign you out of Lanyard.
            </>
          ) : (
            'An application asks to sign you out of Lanyard.'
          )}{' '}
          You are signed in as <strong>{user.username}</strong>.
        </p>
        <form method="post" action={CONFIRM_PATH}>
          <CsrfField token={token} />
          <Hidden name="client_id" value={req.application?.uid} />
          <Hidden name="post_logout_redirect_uri" value={req.redirectUri} />
          <Hidden name="state" value={req.state} />
          <div class="actions">
            <Button>Sign out</Button>
            <LinkButton href={DEFAULT_AFTER_SIGN_IN} variant="secondary">
              Stay signed in
            </LinkButton>
          </div>
        </form>
      </Layout>,
    );
  };

  app.get(END_SESSION_PATH, endSession);
  // §2: the OP supports POST too (a relying party's auto-submitted form, from its own origin).
  app.post(END_SESSION_PATH, endSession);

  app.post(CONFIRM_PATH, CONFIRM_FORM, async (request, reply) => {
    const params = mergedParams(request);
    const session = await sessions.read(request);
    if (!session || !(await sessions.verifyCsrf(session, params[CSRF_FIELD]))) return csrfRejected(reply);
    const req = await check({ ...params, id_token_hint: undefined });
    if (!req.ok) return errorPage(reply, 400, req.error, req.description);
    await sessions.destroy(request, reply, 'end_session');
    return finish(reply, req, request.method);
  });
}
