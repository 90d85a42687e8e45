// GET /oauth/authorize (consent page) and POST /oauth/authorize (the user's decision), with
// OpenID Connect's nonce, prompt and max_age (OIDC Core §3.1.2.1, §3.1.2.6).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import type { User } from '../../db/schema';
import type { WebSession } from '../../domain/sessions';
import { createAuthorizationCode } from '../../domain/authorization-codes';
import { findUserById } from '../../domain/users';
import { formRouteOptions } from '../../http/form-body';
import { mergedParams, stringParam } from '../../shared/params';
import { CSRF_FIELD } from '../../http/session';
import { AccessDenied, ConsentRequired, InvalidRequest, LoginRequired } from '../../oauth/errors';
import {
  AUTHORIZE_PARAMETERS,
  errorRedirect,
  redirectWith,
  validateAuthorizeRequest,
  type ValidAuthorizeRequest,
} from '../../oauth/authorize-request';
import { formatScopes, SCOPE_DESCRIPTIONS, type Scope } from '../../domain/scopes';
import { csrfField, csrfRejected, html, redirect, sendPage } from '../../pages/html';

const SIGN_IN_PATH = '/users/sign_in';

/** When the user signed in: the session's record, else (sessions from before it was kept) the user's. */
function authTimeOf(session: WebSession, user: User): Date | undefined {
  if (session.data.auth_time !== undefined) return new Date(session.data.auth_time);
  return user.current_sign_in_at ?? undefined;
}

/** The authorize URL without prompt and max_age: where a forced re-authentication returns to. */
function withoutReauthParams(url: string): string {
  const u = new URL(url, 'http://x');
  u.searchParams.delete('prompt');
  u.searchParams.delete('max_age');
  return u.pathname + u.search;
}

/** The consent form: the authorization request's parameters (hidden fields) and the button pressed. */
const CONSENT_FORM = formRouteOptions({ strings: [...AUTHORIZE_PARAMETERS, 'decision'] });

export async function authorizeRoutes(app: FastifyInstance, { db }: AppContext) {
  const sessions = app.sessions;

  async function issueCode(reply: FastifyReply, req: ValidAuthorizeRequest, session: WebSession, user: User) {
    const { code } = await createAuthorizationCode(db, {
      applicationId: req.application.id,
      userId: user.id,
      nonce: req.nonce,
      authTime: authTimeOf(session, user) ?? new Date(),
      redirectUri: req.redirectUri,
      scopes: req.scopes,
      codeChallenge: req.codeChallenge,
      codeChallengeMethod: req.codeChallengeMethod,
    });
    return redirect(reply, redirectWith(req.redirectUri, { code, state: req.state }));
  }

  function errorPage(reply: FastifyReply, error: string, description: string) {
    return sendPage(
      reply,
      400,
      'An error has occurred',
      html`<p class="error" id="error-code">${error}</p><p id="error-description">${description}</p>`,
    );
  }

  app.get('/oauth/authorize', async (request, reply) => {
    const params = mergedParams(request);
    const req = await validateAuthorizeRequest(db, params);
    if (req.kind === 'error_page') return errorPage(reply, req.error, req.description);
    if (req.kind === 'error_redirect') return redirect(reply, errorRedirect(req.redirectUri, req.error, req.state));

    const session = await sessions.read(request);
    const user = session?.userId ? await findUserById(db, session.userId) : undefined;
    const signedIn = session && user && user.state === 'active';
    const authTime = signedIn ? authTimeOf(session, user) : undefined;
    // OIDC Core §3.1.2.1: prompt=login, or a sign-in older than max_age, asks for a fresh sign-in.
    const forceSignIn =
      req.prompt.has('login') ||
      (req.maxAge !== undefined && (!authTime || Date.now() - authTime.getTime() > req.maxAge * 1000));
    if (!signedIn || forceSignIn) {
      if (req.prompt.has('none'))
        return redirect(reply, errorRedirect(req.redirectUri, new LoginRequired(), req.state));
      const s = await sessions.ensure(request, reply);
      // Back to this URL after sign-in (our own path: request.url is path and query only); without
      // prompt=login and max_age once they have been honoured, or the sign-in would never end.
      s.data.return_to = forceSignIn ? withoutReauthParams(request.url) : request.url;
      if (signedIn) s.data.reauthenticate = true;
      await sessions.save(s);
      return redirect(reply, SIGN_IN_PATH);
    }
    if (req.application.trusted && !req.prompt.has('consent')) return issueCode(reply, req, session, user);
    // The consent page would be needed, and the client asked for no interaction.
    if (req.prompt.has('none'))
      return redirect(reply, errorRedirect(req.redirectUri, new ConsentRequired(), req.state));

    const token = await sessions.csrfToken(session);
    const hidden = (name: string, value: string | undefined) =>
      value === undefined ? '' : html`<input type="hidden" name="${name}" value="${value}">`;
    return sendPage(
      reply,
      200,
      'Authorize application',
      html`<p><strong>${req.application.name}</strong> is requesting access to your account.</p>
<p>This application will be able to:</p>
<ul id="scopes">${req.scopes.map((s) => html`<li><strong>${s}</strong>: ${SCOPE_DESCRIPTIONS[s as Scope] ?? s}</li>`)}</ul>
<form method="post" action="/oauth/authorize">
${csrfField(token)}
${hidden('client_id', req.application.uid)}${hidden('redirect_uri', req.redirectUri)}${hidden('state', req.state)}
${hidden('response_type', 'code')}${hidden('scope', formatScopes(req.scopes))}
${hidden('code_challenge', req.codeChallenge)}${hidden('code_challenge_method', req.codeChallengeMethod)}
${hidden('nonce', req.nonce)}
<button type="submit" name="decision" value="authorize">Authorize</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
      user.username,
    );
  });

  app.post('/oauth/authorize', CONSENT_FORM, async (request, reply) => {
    const params = mergedParams(request);
    const session = await sessions.read(request);
    if (!(await sessions.verifyCsrf(session, params[CSRF_FIELD]))) {
      return csrfRejected(reply);
    }
    const user = session?.userId ? await findUserById(db, session.userId) : undefined;
    if (!session || !user || user.state !== 'active') return redirect(reply, SIGN_IN_PATH);
    const req = await validateAuthorizeRequest(db, params);
    if (req.kind === 'error_page') return errorPage(reply, req.error, req.description);
    if (req.kind === 'error_redirect') return redirect(reply, errorRedirect(req.redirectUri, req.error, req.state));
    const decision = stringParam(params, 'decision');
    if (decision === 'authorize') return issueCode(reply, req, session, user);
    const error = decision === 'deny' ? new AccessDenied() : new InvalidRequest();
    return redirect(reply, errorRedirect(req.redirectUri, error, req.state));
  });
}
