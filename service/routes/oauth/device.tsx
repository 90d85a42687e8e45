// /oauth/device (RFC 8628 §3.3): the signed-in person enters the user code shown by the device,
// sees the application and its scopes, and authorizes or denies it. verification_uri_complete
// (?user_code=) only pre-fills the form: approving still takes the person's click (§5.4).
// Wrong codes count per web session (5 a minute) and per address (the shared credential limit).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import { findApplicationById } from '../../domain/applications';
import { decideDeviceGrant, checkUserCode } from '../../domain/device-grants';
import { SCOPE_DESCRIPTIONS, sortScopes, type Scope } from '../../domain/scopes';
import type { WebSession } from '../../domain/sessions';
import { formRouteOptions } from '../../http/form-body';
import { CSRF_FIELD } from '../../http/session';
import { csrfRejected } from '../../pages/common';
import { Button, CsrfField, TextField } from '../../pages/components';
import { currentUser, requireSignIn, SIGN_IN_PATH } from '../../pages/current-user';
import * as React from '../../pages/jsx';
import { Layout, type PageUser, seeOther, sendPage } from '../../pages/layout';
import { mergedParams, stringParam } from '../../shared/params';

const DEVICE_PATH = '/oauth/device';
const DEVICE_FORM = formRouteOptions({ strings: ['user_code', 'decision'] });

// Doorkeeper's device-grant wording (doorkeeper.flash.device_codes.authorize).
const INVALID_USER_CODE = 'The user code is invalid';
const EXPIRED_USER_CODE = 'The user code is expired';
const AUTHORIZED = 'Device successfully authorized';

export async function deviceRoutes(app: FastifyInstance, { db }: AppContext) {
  const sessions = app.sessions;

  async function codeForm(
    reply: FastifyReply,
    session: WebSession,
    user: PageUser,
    status: number,
    opts: { userCode?: string; error?: string },
  ) {
    const token = await sessions.csrfToken(session);
    return sendPage(
      reply,
      status,
      <Layout title="Authorize a device" variant="card" user={user} csrf={token}>
        {opts.error ? (
          <p class="flash flash-alert" role="alert" id="error">
            {opts.error}
          </p>
        ) : null}
        <form method="post" action={DEVICE_PATH}>
          <CsrfField token={token} />
          <TextField
            id="user_code"
            name="user_code"
            label="Enter the code displayed on your device"
            value={opts.userCode ?? ''}
            autocomplete="off"
            inputmode="text"
            maxlength={20}
            required
          />
          <Button>Continue</Button>
        </form>
      </Layout>,
    );
  }

  app.get(DEVICE_PATH, async (request, reply) => {
    const current = await currentUser(sessions, request);
    // Back to this exact URL (with its user_code) after sign-in.
    if (!current) return requireSignIn(sessions, request, reply);
    const userCode = stringParam(mergedParams(request), 'user_code');
    return codeForm(reply, current.session, current.user, 200, { userCode });
  });

  app.post(DEVICE_PATH, DEVICE_FORM, async (request, reply) => {
    const params = mergedParams(request);
    const session = await sessions.read(request);
    if (!(await sessions.verifyCsrf(session, params[CSRF_FIELD]))) return csrfRejected(reply);
    const current = await currentUser(sessions, request);
    if (!current) return seeOther(reply, SIGN_IN_PATH);
    const { user } = current;
    const userCode = stringParam(params, 'user_code') ?? '';

    // Counted before the look-up: while blocked, a right code does not get through either.
    const checked = await checkUserCode(db, { sessionId: current.session.id, address: request.ip, userCode });
    if (!checked.ok) {
      const { retryAfter } = checked.throttle;
      reply.header('retry-after', String(retryAfter));
      return sendPage(
        reply,
        429,
        <Layout title="Too many attempts" variant="card" user={user}>
          <p class="flash flash-alert" role="alert">
            Too many wrong codes. Try again in {retryAfter} seconds.
          </p>
        </Layout>,
      );
    }
    const { grant } = checked;
    if (!grant) return codeForm(reply, current.session, user, 400, { userCode, error: INVALID_USER_CODE });
    if (grant.expired) return codeForm(reply, current.session, user, 400, { error: EXPIRED_USER_CODE });
    const application = await findApplicationById(db, grant.application_id);
    if (!application) return codeForm(reply, current.session, user, 400, { error: INVALID_USER_CODE });

    const decision = stringParam(params, 'decision');
    if (decision === 'authorize' || decision === 'deny') {
      const decided = await decideDeviceGrant(db, grant.id, user.id, decision === 'authorize' ? 'approved' : 'denied');
      // Lost to a concurrent decision, or expired since the look-up.
      if (!decided) return codeForm(reply, current.session, user, 400, { error: EXPIRED_USER_CODE });
      return seeOther(reply, decision === 'authorize' ? `${DEVICE_PATH}/authorized` : `${DEVICE_PATH}/denied`);
    }

    const token = await sessions.csrfToken(current.session);
    return sendPage(
      reply,
      200,
      <Layout title="Authorize a device" variant="card" user={user} csrf={token}>
        <p>
          <strong id="application">{application.name}</strong> is requesting access to your account from a device.
        </p>
        <p>This application will be able to:</p>
        <ul id="scopes">
          {sortScopes(grant.scopes).map((s) => (
            <li>
              <strong>{s}</strong>: {SCOPE_DESCRIPTIONS[s as Scope] ?? s}
            </li>
          ))}
        </ul>
        <p>
          Only authorize it if you started this sign-in on your device and the code there reads{' '}
          <strong>{userCode.toUpperCase()}</strong>.
        </p>
        <form method="post" action={DEVICE_PATH}>
          <CsrfField token={token} />
          <input type="hidden" name="user_code" value={userCode} />
          <Button name="decision" value="authorize">
            Authorize
          </Button>
          <Button variant="danger" name="decision" value="deny">
            Deny
          </Button>
        </form>
      </Layout>,
    );
  });

  app.get(`${DEVICE_PATH}/authorized`, async (_request, reply) =>
    sendPage(
      reply,
      200,
      <Layout title={AUTHORIZED} variant="card">
        <p id="result">You can close this page and return to your device.</p>
      </Layout>,
    ),
  );
  app.get(`${DEVICE_PATH}/denied`, async (_request, reply) =>
    sendPage(
      reply,
      200,
      <Layout title="Device authorization denied" variant="card">
        <p id="result">The device was not given access. You can close this page.</p>
      </Layout>,
    ),
  );
}
