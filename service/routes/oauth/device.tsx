// /oauth/device (RFC 8628 §3.3): the signed-in person enters the user code shown by the device,
// sees the application and its scopes, and authorizes or denies it. verification_uri_complete
// (?user_code=) only pre-fills the form: approving still takes the person's click (§5.4). The code
// step answers with a redirect to the consent step (post/redirect/get), which checks the code again.
// Wrong codes count per web session (5 a minute) and per address (the shared credential limit).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import { findApplicationById, findApplicationOwner } from '../../domain/applications';
import { decideDeviceGrant, checkUserCode } from '../../domain/device-grants';
import type { WebSession } from '../../domain/sessions';
import { formRouteOptions } from '../../http/form-body';
import { CSRF_FIELD } from '../../http/session';
import { csrfRejected } from '../../pages/common';
import { Button, CsrfField, TextField } from '../../pages/components';
import { currentUser, requireSignIn, SIGN_IN_PATH, type SignedIn, signInOf } from '../../pages/current-user';
import * as React from '../../pages/jsx';
import { Layout, type PageUser, seeOther, sendPage } from '../../pages/layout';
import { mergedParams, stringParam } from '../../shared/params';
import { ConsentPage } from './consent-page';

const DEVICE_PATH = '/oauth/device';
/** The consent step, reached by a redirect from the code step. */
const CONFIRM_PATH = '/oauth/device/confirm';
const DEVICE_FORM = formRouteOptions({ strings: ['user_code', 'decision'] });

// What the code step says (GOV.UK style: what happened and what to do; Doorkeeper's "The user code
// is invalid" said neither).
const BLANK_USER_CODE = 'Enter the code shown on your device';
const INVALID_USER_CODE = 'That code is not right. Check the code shown on your device and enter it again';
const EXPIRED_USER_CODE = 'That code has expired. Start again on your device to get a new code';
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
      <Layout
        title="Authorize a device"
        variant="card"
        user={user}
        csrf={token}
        errors={opts.error ? [{ field: 'user_code', message: opts.error }] : undefined}
      >
        <form method="post" action={DEVICE_PATH}>
          <CsrfField token={token} />
          <TextField
            id="user_code"
            name="user_code"
            label="Enter the code displayed on your device"
            hint="It has 8 letters, like WDJB-MJHT."
            value={opts.userCode ?? ''}
            error={opts.error}
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

  /**
   * A user code from the form or the confirm page's URL, checked (and counted: a wrong code counts
   * the same on either) — the pending grant, or the reply already sent.
   */
  async function checkedGrant(request: FastifyRequest, reply: FastifyReply, current: SignedIn, userCode: string) {
    const { user, session } = current;
    const checked = await checkUserCode(db, { sessionId: session.id, address: request.ip, userCode });
    if (!checked.ok) {
      const { retryAfter } = checked.throttle;
      reply.header('retry-after', String(retryAfter));
      await sendPage(
        reply,
        429,
        <Layout title="Too many attempts" variant="card" user={user}>
          <p class="flash flash-alert" role="alert">
            Too many wrong codes. Try again in {retryAfter} seconds.
          </p>
        </Layout>,
      );
      return undefined;
    }
    const { grant } = checked;
    if (!grant) return void (await codeForm(reply, session, user, 400, { userCode, error: INVALID_USER_CODE }));
    if (grant.expired) return void (await codeForm(reply, session, user, 400, { error: EXPIRED_USER_CODE }));
    return grant;
  }

  // The code step: checked, then post/redirect/get to the consent page (Back never re-posts it).
  app.post(DEVICE_PATH, DEVICE_FORM, async (request, reply) => {
    const params = mergedParams(request);
    const session = await sessions.read(request);
    if (!(await sessions.verifyCsrf(session, params[CSRF_FIELD]))) return csrfRejected(reply);
    const current = await currentUser(sessions, request);
    if (!current) return seeOther(reply, SIGN_IN_PATH);
    const userCode = stringParam(params, 'user_code') ?? '';
    // Nothing typed is no guess: say so without counting it.
    if (userCode.trim() === '') return codeForm(reply, current.session, current.user, 400, { error: BLANK_USER_CODE });
    const grant = await checkedGrant(request, reply, current, userCode);
    if (!grant) return reply;

    const decision = stringParam(params, 'decision');
    if (decision === 'authorize' || decision === 'deny') {
      const decided = await decideDeviceGrant(db, grant.id, {
        userId: current.user.id,
        status: decision === 'authorize' ? 'approved' : 'denied',
        ...signInOf(current),
      });
      // Lost to a concurrent decision, or expired since the look-up.
      if (!decided) return codeForm(reply, current.session, current.user, 400, { error: EXPIRED_USER_CODE });
      return seeOther(reply, decision === 'authorize' ? `${DEVICE_PATH}/authorized` : `${DEVICE_PATH}/denied`);
    }
    return seeOther(reply, `${CONFIRM_PATH}?${new URLSearchParams({ user_code: userCode })}`);
  });

  app.get(CONFIRM_PATH, async (request, reply) => {
    const current = await currentUser(sessions, request);
    if (!current) return requireSignIn(sessions, request, reply);
    const userCode = stringParam(mergedParams(request), 'user_code') ?? '';
    const grant = await checkedGrant(request, reply, current, userCode);
    if (!grant) return reply;
    const application = await findApplicationById(db, grant.application_id);
    if (!application) return codeForm(reply, current.session, current.user, 400, { error: INVALID_USER_CODE });
    return sendPage(
      reply,
      200,
      <ConsentPage
        user={current.user}
        csrf={await sessions.csrfToken(current.session)}
        applicationName={application.name}
        owner={await findApplicationOwner(db, application)}
        scopes={grant.scopes}
        action={DEVICE_PATH}
        hidden={{ user_code: userCode }}
        returnTo={request.url}
      >
        <p id="device-code">
          Only authorize it if you started this sign-in on your device and the code there reads{' '}
          <strong>{userCode.toUpperCase()}</strong>.
        </p>
      </ConsentPage>,
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
