// GET /oauth/authorize (consent page) and POST /oauth/authorize (the user's decision).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import { createAuthorizationCode } from '../../domain/authorization-codes';
import { findUserById } from '../../domain/users';
import { formRouteOptions } from '../../http/form-body';
import { mergedParams, stringParam } from '../../shared/params';
import { CSRF_FIELD } from '../../http/session';
import { AccessDenied, InvalidRequest } from '../../oauth/errors';
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

/** The consent form: the authorization request's parameters (hidden fields) and the button pressed. */
const CONSENT_FORM = formRouteOptions({ strings: [...AUTHORIZE_PARAMETERS, 'decision'] });

export async function authorizeRoutes(app: FastifyInstance, { db }: AppContext) {
  const sessions = app.sessions;

  async function issueCode(reply: FastifyReply, req: ValidAuthorizeRequest, userId: number) {
    const { code } = await createAuthorizationCode(db, {
      applicationId: req.application.id,
      userId,
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
    if (!session || !user || user.state !== 'active') {
      // Back to this exact URL after sign-in (our own path: request.url is path and query only).
      const s = await sessions.ensure(request, reply);
      s.data.return_to = request.url;
      await sessions.save(s);
      return redirect(reply, SIGN_IN_PATH);
    }
    if (req.application.trusted) return issueCode(reply, req, user.id);

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
    if (user?.state !== 'active') return redirect(reply, SIGN_IN_PATH);
    const req = await validateAuthorizeRequest(db, params);
    if (req.kind === 'error_page') return errorPage(reply, req.error, req.description);
    if (req.kind === 'error_redirect') return redirect(reply, errorRedirect(req.redirectUri, req.error, req.state));
    const decision = stringParam(params, 'decision');
    if (decision === 'authorize') return issueCode(reply, req, user.id);
    const error = decision === 'deny' ? new AccessDenied() : new InvalidRequest();
    return redirect(reply, errorRedirect(req.redirectUri, error, req.state));
  });
}
