// GET /oauth/authorize (consent page) and POST /oauth/authorize (the user's decision), with
// OpenID Connect's nonce, prompt and max_age (OIDC Core §3.1.2.1, §3.1.2.6).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import type { User } from '../../db/schema';
import { findApplicationAndSession, type WebSession } from '../../domain/sessions';
import { createAuthorizationCode } from '../../domain/authorization-codes';
import { hasLiveGrantCovering } from '../../domain/authorized-applications';
import { findApplicationOwner } from '../../domain/applications';
import { formatScopes } from '../../domain/scopes';
import { formRouteOptions } from '../../http/form-body';
import { mergedParams, stringParam } from '../../shared/params';
import { CSRF_FIELD } from '../../http/session';
import {
  AUTHORIZE_PARAMETERS,
  authorizeClientId,
  checkAuthorizeRequest,
  errorRedirect,
  redirectWith,
  type ValidAuthorizeRequest,
  validateAuthorizeRequest,
} from '../../oauth/authorize-request';
import { AccessDenied, ConsentRequired, InvalidRequest, LoginRequired } from '../../oauth/errors';
import { csrfRejected, errorPage as sharedErrorPage } from '../../pages/common';
import { requireSignIn, SIGN_IN_PATH, signedInWith, signInOf } from '../../pages/current-user';
import * as React from '../../pages/jsx';
import { redirect, sendPage } from '../../pages/layout';
import { ConsentPage } from './consent-page';

/** The authorize URL without prompt and max_age: where a forced re-authentication returns to. */
function withoutReauthParams(url: string): string {
  const u = new URL(url, 'http://x');
  u.searchParams.delete('prompt');
  u.searchParams.delete('max_age');
  return u.pathname + u.search;
}

/** The consent form: the authorization request's parameters (hidden fields) and the button pressed. */
const CONSENT_FORM = formRouteOptions(
  { strings: [...AUTHORIZE_PARAMETERS, 'decision'], arrays: ['resource'] },
  {},
  // A repeated authorization parameter goes back to the client as invalid_request (§4.1.2.1).
  { rejectRepeated: false },
);

/**
 * Where the answer goes, as the consent page names it: the host (with a port other than the
 * scheme's), or for a native app's private-use scheme (RFC 8252 §7.1) the scheme.
 */
function hostOf(uri: string): string {
  const u = new URL(uri);
  return u.host || u.protocol.replace(/:$/, '');
}

export async function authorizeRoutes(app: FastifyInstance, { db, config }: AppContext) {
  const sessions = app.sessions;

  async function issueCode(reply: FastifyReply, req: ValidAuthorizeRequest, session: WebSession, user: User) {
    const signIn = signInOf({ session, user });
    const { code } = await createAuthorizationCode(db, {
      applicationId: req.application.id,
      userId: user.id,
      nonce: req.nonce,
      authTime: signIn.authTime ?? new Date(),
      amr: signIn.amr,
      sid: session.data.sid,
      redirectUri: req.redirectUri,
      scopes: req.scopes,
      codeChallenge: req.codeChallenge,
      codeChallengeMethod: req.codeChallengeMethod,
      dpopJkt: req.dpopJkt,
      resources: req.resources,
    });
    return redirect(reply, redirectWith(req.redirectUri, config.publicUrl, { code, state: req.state }));
  }

  const errorPage = (reply: FastifyReply, error: string, description: string) =>
    sharedErrorPage(reply, 400, error, description);

  app.get('/oauth/authorize', async (request, reply) => {
    const params = mergedParams(request);
    // The client application and the browser's session (with its user): one round trip.
    const clientId = authorizeClientId(params);
    const { application, session } = await sessions.readWith(request, (sessionId) =>
      findApplicationAndSession(db, clientId, sessionId),
    );
    const req = checkAuthorizeRequest(params, application, config.publicUrl);
    if (req.kind === 'error_page') return errorPage(reply, req.error, req.description);
    if (req.kind === 'error_redirect')
      return redirect(reply, errorRedirect(req.redirectUri, config.publicUrl, req.error, req.state));

    const signedIn = await signedInWith(sessions, session);
    const authTime = signedIn ? signInOf(signedIn).authTime : undefined;
    // OIDC Core §3.1.2.1: prompt=login, or a sign-in older than max_age, asks for a fresh sign-in.
    const forceSignIn =
      req.prompt.has('login') ||
      (req.maxAge !== undefined && (!authTime || Date.now() - authTime.getTime() > req.maxAge * 1000));
    if (!signedIn || forceSignIn) {
      if (req.prompt.has('none'))
        return redirect(reply, errorRedirect(req.redirectUri, config.publicUrl, new LoginRequired(), req.state));
      // Back to this URL after sign-in; without prompt=login and max_age once they have been
      // honoured, or the sign-in would never end.
      return requireSignIn(sessions, request, reply, {
        returnTo: forceSignIn ? withoutReauthParams(request.url) : request.url,
        reauthenticate: signedIn !== undefined,
      });
    }
    const { user } = signedIn;
    // A dynamically registered application (RFC 7591) is anyone's claim to a name: always asked.
    const skipConsent =
      !req.prompt.has('consent') &&
      !req.application.dynamically_registered &&
      (req.application.trusted ||
        // Contract §2 (GitLab/Doorkeeper): a confidential application the user already authorized,
        // with a live grant covering every requested scope, gets its code without asking again; the
        // user withdraws that on the authorized-applications page. Never a public one: anyone can
        // present its client_id.
        (req.application.confidential &&
          (await hasLiveGrantCovering(db, {
            applicationId: req.application.id,
            userId: user.id,
            scopes: req.scopes,
          }))));
    if (skipConsent) return issueCode(reply, req, signedIn.session, user);
    // The consent page would be needed, and the client asked for no interaction.
    if (req.prompt.has('none'))
      return redirect(reply, errorRedirect(req.redirectUri, config.publicUrl, new ConsentRequired(), req.state));

    const token = await sessions.csrfToken(signedIn.session);
    return sendPage(
      reply,
      200,
      <ConsentPage
        user={user}
        csrf={token}
        applicationName={req.application.name}
        owner={await findApplicationOwner(db, req.application)}
        scopes={req.scopes}
        action="/oauth/authorize"
        hidden={{
          client_id: req.application.uid,
          redirect_uri: req.redirectUri,
          state: req.state,
          response_type: 'code',
          scope: formatScopes(req.scopes),
          code_challenge: req.codeChallenge,
          code_challenge_method: req.codeChallengeMethod,
          nonce: req.nonce,
          dpop_jkt: req.dpopJkt,
          resource: req.resources,
        }}
        dynamicallyRegistered={req.application.dynamically_registered}
        redirectHost={hostOf(req.redirectUri)}
        returnTo={request.url}
      >
        {req.resources.length > 0 ? (
          <p id="resources">
            For use with: {req.resources.map((r, i) => (i === 0 ? <code>{r}</code> : [', ', <code>{r}</code>]))}
          </p>
        ) : null}
      </ConsentPage>,
    );
  });

  app.post('/oauth/authorize', CONSENT_FORM, async (request, reply) => {
    const params = mergedParams(request);
    const session = await sessions.read(request);
    if (!(await sessions.verifyCsrf(session, params[CSRF_FIELD]))) return csrfRejected(reply);
    const signedIn = await signedInWith(sessions, session);
    if (!signedIn) return redirect(reply, SIGN_IN_PATH);
    const req = await validateAuthorizeRequest(db, params, config.publicUrl);
    if (req.kind === 'error_page') return errorPage(reply, req.error, req.description);
    if (req.kind === 'error_redirect')
      return redirect(reply, errorRedirect(req.redirectUri, config.publicUrl, req.error, req.state));
    const decision = stringParam(params, 'decision');
    if (decision === 'authorize') return issueCode(reply, req, signedIn.session, signedIn.user);
    const error = decision === 'deny' ? new AccessDenied() : new InvalidRequest();
    return redirect(reply, errorRedirect(req.redirectUri, config.publicUrl, error, req.state));
  });
}
