// Passkeys and security keys on the pages: the two-factor page's list (add, rename, remove with the
// current password) and the sign-in steps (the second factor after the password, and passwordless
// with "Sign in with a passkey" or the browser's autofill). The browser half is the one script
// (pages/webauthn-script.ts); it asks the `…/options` routes for a ceremony's options (JSON, same
// origin, CSRF token in the body) and posts the credential in the form's hidden field, so every
// decision is a form post answered with a page or a redirect.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import { DomainError } from '../../domain/errors';
import {
  type AssertionRefusal,
  authenticationOptions,
  checkWebAuthnAssertion,
  registerWebAuthnCredential,
  registrationOptions,
  relyingPartyOf,
  removeWebAuthnCredential,
  renameWebAuthnCredential,
  type WebAuthnCredentialView,
} from '../../domain/webauthn';
import { formRouteOptions } from '../../http/form-body';
import { CSRF_FIELD } from '../../http/session';
import type { Page } from '../../domain/page';
import { csrfRejected } from '../../pages/common';
import { Button, CsrfField, type FieldError, type Flash, formatDate, TextField } from '../../pages/components';
import { SIGN_IN_PATH } from '../../pages/current-user';
import { Pagination } from '../../pages/pagination';
import { setFlash } from '../../pages/flash';
import * as React from '../../pages/jsx';
import { Layout, PRODUCT_NAME, seeOther, sendPage } from '../../pages/layout';
import { WEBAUTHN_SCRIPT_PATH } from '../../pages/webauthn-script';
import { stringParam } from '../../shared/params';
import { type AccountRequest, accountGuardFor, auditActor, currentPasswordRefusal, redirectWithFlash } from './account';
import { keepRecoveryCodes } from './two-factor';
import { completeSignIn, pendingSecondStep } from './sign-in-steps';

const SIGN_IN_WEBAUTHN = '/users/sign_in/webauthn';
const OPTIONS_FORM = formRouteOptions({ strings: ['purpose'] });
const ASSERTION_FORM = formRouteOptions({ strings: ['purpose', 'credential'] });
const REGISTER_FORM = formRouteOptions({ strings: ['name', 'credential'] });
const RENAME_FORM = formRouteOptions({ strings: ['name'] });
const REMOVE_FORM = formRouteOptions({ strings: ['current_password'] });
/** A credential's row id from the path; 0 (no such row) when it is not one. */
const idOf = (request: FastifyRequest): number => {
  const raw = (request.params as { id?: string }).id ?? '';
  return /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : 0;
};

/** What a refused assertion tells the person (the reason names the case; nothing else leaks). */
export const ASSERTION_MESSAGES: Record<AssertionRefusal, string> = {
  malformed: 'The browser sent no valid passkey response. Try again.',
  expired: 'This sign-in request has expired or was already used. Try again.',
  unknown_credential: 'This passkey or security key is not registered here.',
  other_account: 'This passkey or security key belongs to another account.',
  verification_failed: 'The passkey or security key could not be verified.',
  counter: 'This security key’s signature counter went backwards: it may have been copied. Sign in another way.',
  backup_state: 'This passkey’s backup eligibility changed: it may not be the one registered. Sign in another way.',
  blocked: 'This account is blocked.',
  locked: 'Too many failed attempts on this account. Try again later.',
};

/** The hidden message box the script fills (no WebAuthn, cancelled, refused to start). */
const ScriptError = ({ id }: { id: string }) => (
  <p class="flash flash-alert" role="alert" id={id} data-webauthn-error hidden>
    {''}
  </p>
);

// ---- Sign-in ----

/** "Sign in with a passkey" under the password form; also the browser's autofill (conditional UI). */
export function PasskeySignIn({ csrf, error }: { csrf: string; error?: string }): React.Html {
  return (
    <form
      method="post"
      action={SIGN_IN_WEBAUTHN}
      class="passkey-sign-in"
      data-webauthn="authenticate"
      data-options-url={`${SIGN_IN_WEBAUTHN}/options`}
      data-conditional
    >
      <CsrfField token={csrf} />
      <input type="hidden" name="purpose" value="passwordless" />
      <input type="hidden" name="credential" value="" />
      {error ? (
        <p class="flash flash-alert" role="alert">
          {error}
        </p>
      ) : null}
      <ScriptError id="passkey-error" />
      <div class="actions">
        <Button variant="secondary">Sign in with a passkey</Button>
      </div>
    </form>
  );
}

/**
 * The second step for a person with a passkey or security key: use it, or (in the disclosure) a
 * TOTP code or recovery code instead.
 */
export function SecurityKeyStep({
  csrf,
  totp,
  error,
  otpError,
}: {
  csrf: string;
  totp: boolean;
  /** The passkey's refusal. */
  error?: string;
  /** The code's refusal: shown at the code field, its section open. */
  otpError?: string;
}): React.Html {
  return (
    <Layout
      title="Two-factor authentication"
      variant="card"
      scripts={[WEBAUTHN_SCRIPT_PATH]}
      errors={otpError ? [{ field: 'user_otp_attempt', message: otpError }] : undefined}
    >
      <form
        method="post"
        action={SIGN_IN_WEBAUTHN}
        data-webauthn="authenticate"
        data-options-url={`${SIGN_IN_WEBAUTHN}/options`}
      >
        <p>Use your passkey or security key to finish signing in.</p>
        <CsrfField token={csrf} />
        <input type="hidden" name="purpose" value="second_factor" />
        <input type="hidden" name="credential" value="" />
        {error ? (
          <p class="flash flash-alert" role="alert" id="webauthn-step-error">
            {error}
          </p>
        ) : null}
        <ScriptError id="security-key-error" />
        <div class="actions">
          <Button>Use your passkey or security key</Button>
        </div>
      </form>
      <details class="other-factor" open={otpError !== undefined}>
        <summary>{totp ? 'Use a TOTP or recovery code instead' : 'Use a recovery code instead'}</summary>
        <form method="post" action={SIGN_IN_PATH}>
          <CsrfField token={csrf} />
          <TextField
            id="user_otp_attempt"
            name="user[otp_attempt]"
            label={totp ? 'Two-factor code' : 'Recovery code'}
            hint={
              totp
                ? 'Enter the code from your authenticator app, or one of your recovery codes.'
                : 'Enter one of your recovery codes.'
            }
            autocomplete="one-time-code"
            error={otpError}
            required
          />
          <div class="actions">
            <Button variant="secondary">Verify code</Button>
          </div>
        </form>
      </details>
    </Layout>
  );
}

const purposeOf = (value: string | undefined) =>
  value === 'second_factor' || value === 'passwordless' ? value : undefined;

export async function webAuthnSignInRoutes(app: FastifyInstance, { db, config }: AppContext) {
  const sessions = app.sessions;
  const rp = () => relyingPartyOf(config.publicUrl, PRODUCT_NAME);
  const jsonError = (reply: FastifyReply, status: number, message: string) =>
    reply.code(status).header('cache-control', 'no-store').send({ message });

  app.post(`${SIGN_IN_WEBAUTHN}/options`, OPTIONS_FORM, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const session = await sessions.read(request);
    if (!session || !(await sessions.verifyCsrf(session, body[CSRF_FIELD])))
      return jsonError(reply, 422, 'Invalid or missing authenticity token. Reload the page and try again.');
    const purpose = purposeOf(stringParam(body, 'purpose'));
    if (!purpose) return jsonError(reply, 400, 'Unknown purpose.');
    const userId = purpose === 'second_factor' ? pendingSecondStep(session) : null;
    if (userId === undefined) return jsonError(reply, 401, 'Your sign-in took too long. Sign in again.');
    const options = await authenticationOptions(db, rp(), purpose, session.id, userId);
    return reply.header('cache-control', 'no-store').send(options);
  });

  app.post(SIGN_IN_WEBAUTHN, ASSERTION_FORM, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const session = await sessions.read(request);
    if (!session || !(await sessions.verifyCsrf(session, body[CSRF_FIELD]))) return csrfRejected(reply);
    const purpose = purposeOf(stringParam(body, 'purpose'));
    const userId = purpose === 'second_factor' ? pendingSecondStep(session) : null;
    if (!purpose || userId === undefined) {
      await setFlash(sessions, session, SIGN_IN_PATH, { alert: 'Your sign-in took too long. Sign in again.' });
      return seeOther(reply, SIGN_IN_PATH);
    }
    const result = await checkWebAuthnAssertion(db, rp(), {
      purpose,
      userId,
      sessionId: session.id,
      response: stringParam(body, 'credential') ?? '',
      address: request.ip,
    });
    if (result.ok) return completeSignIn(app, db, request, reply, session, result.user.id, result.amr);
    if (result.reason === 'rate_limited') {
      reply.header('retry-after', String(result.retryAfter));
      return sendPage(
        reply,
        429,
        <Layout title="Too many attempts" variant="card">
          <p class="flash flash-alert" role="alert">
            Too many failed sign-in attempts. Try again in {result.retryAfter} seconds.
          </p>
        </Layout>,
      );
    }
    const message = ASSERTION_MESSAGES[result.reason];
    if (purpose === 'second_factor') {
      const user = await sessions.userOf({ ...session, userId: userId ?? null });
      return sendPage(
        reply,
        401,
        <SecurityKeyStep csrf={await sessions.csrfToken(session)} totp={!!user?.otp_secret} error={message} />,
      );
    }
    return sendPage(
      reply,
      401,
      <Layout title="Sign in with a passkey" variant="card" scripts={[WEBAUTHN_SCRIPT_PATH]}>
        <PasskeySignIn csrf={await sessions.csrfToken(session)} error={message} />
        <p>
          <a href={SIGN_IN_PATH}>Sign in with your password instead</a>
        </p>
      </Layout>,
    );
  });
}

// ---- The two-factor page ----

/** The two-factor page's section: the person's credentials and the form that adds one. */
export function WebAuthnPanel(props: {
  base: string;
  csrf: string;
  credentials: Page<WebAuthnCredentialView>;
  /** The list's page (`?page=N` of the two-factor page). */
  page: number;
  errors?: readonly FieldError[];
}): React.Html {
  const err = (field: string) => props.errors?.find((e) => e.field === field)?.message;
  const action = `${props.base}/webauthn`;
  return (
    <section class="panel" aria-labelledby="webauthn-title" id="webauthn">
      <h2 id="webauthn-title">Passkeys and security keys</h2>
      <p>
        A passkey or security key signs you in with your device’s screen lock or a touch, and cannot be phished. A
        passkey also signs you in without your password.
      </p>
      {props.credentials.total === 0 ? (
        <p id="webauthn-none">You have no passkeys or security keys.</p>
      ) : (
        <table class="list" id="webauthn-credentials">
          <caption class="visually-hidden">Your passkeys and security keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {props.credentials.rows.map((c) => (
              <tr>
                <td data-label="Name">{c.name}</td>
                <td data-label="Type">{c.kind === 'passkey' ? 'Passkey' : 'Security key'}</td>
                <td data-label="Created">{formatDate(c.created_at)}</td>
                <td data-label="Last used">{c.last_used_at ? formatDate(c.last_used_at) : 'Never'}</td>
                <td data-label="Actions">
                  <details>
                    <summary>Rename or remove</summary>
                    <form method="post" action={`${action}/${c.id}/rename`}>
                      <CsrfField token={props.csrf} />
                      <TextField
                        id={`webauthn_rename_${c.id}`}
                        name="name"
                        label={`New name for ${c.name}`}
                        value={c.name}
                        error={err(`webauthn_rename_${c.id}`)}
                        required
                      />
                      <Button variant="secondary" small>
                        Rename
                      </Button>
                    </form>
                    <form method="post" action={`${action}/${c.id}/delete`}>
                      <CsrfField token={props.csrf} />
                      <TextField
                        id={`webauthn_remove_${c.id}`}
                        name="current_password"
                        type="password"
                        label="Current password"
                        autocomplete="current-password"
                        error={err(`webauthn_remove_${c.id}`)}
                        required
                      />
                      <Button variant="danger" small>
                        {`Remove ${c.name}`}
                      </Button>
                    </form>
                  </details>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pagination
        path={props.base}
        page={props.page}
        total={props.credentials.total}
        label="Passkeys and security keys pages"
      />
      <h3 id="webauthn-add-title">Add a passkey or security key</h3>
      <form method="post" action={action} data-webauthn="register" data-options-url={`${action}/options`}>
        <CsrfField token={props.csrf} />
        <input type="hidden" name="credential" value="" />
        <TextField
          id="webauthn_name"
          name="name"
          label="Name"
          hint="To tell your keys apart, for example “Laptop” or “Blue key”."
          error={err('webauthn_name')}
          required
        />
        {err('webauthn_credential') ? (
          <p class="flash flash-alert" role="alert" id="webauthn_credential">
            {err('webauthn_credential')}
          </p>
        ) : null}
        <ScriptError id="webauthn-register-error" />
        <div class="actions">
          <Button>Add passkey or security key</Button>
        </div>
      </form>
    </section>
  );
}

/** How the two-factor page renders itself (its own route file's `page`). */
type TwoFactorPage = (
  reply: FastifyReply,
  r: AccountRequest,
  opts?: { status?: number; errors?: FieldError[]; flash?: Flash },
) => Promise<unknown>;

export async function webAuthnAccountRoutes(
  app: FastifyInstance,
  { db, config }: AppContext,
  base: string,
  page: TwoFactorPage,
) {
  const guard = accountGuardFor(app);
  const rp = () => relyingPartyOf(config.publicUrl, PRODUCT_NAME);
  const fieldOf = (err: DomainError, prefix: string, id?: number) => {
    const field = Object.keys(err.details ?? {})[0];
    if (id !== undefined) return `${prefix}_${id}`;
    return field === 'name' ? `${prefix}_name` : `${prefix}_credential`;
  };

  app.post(`${base}/webauthn/options`, formRouteOptions({ strings: [] }), async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const options = await registrationOptions(db, rp(), r.user, r.session.id);
    return reply.header('cache-control', 'no-store').send(options);
  });

  app.post(`${base}/webauthn`, REGISTER_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const body = (request.body ?? {}) as Record<string, unknown>;
    try {
      const added = await registerWebAuthnCredential(
        db,
        rp(),
        {
          userId: r.user.id,
          sessionId: r.session.id,
          name: stringParam(body, 'name') ?? '',
          response: stringParam(body, 'credential') ?? '',
        },
        auditActor(r.user, request),
      );
      const what = added.credential.kind === 'passkey' ? 'passkey' : 'security key';
      const notice = added.recoveryCodes
        ? `Your ${what} “${added.credential.name}” was added. Save your recovery codes.`
        : `Your ${what} “${added.credential.name}” was added.`;
      // Shown on the two-factor page until the person confirms they saved them (as TOTP's).
      if (added.recoveryCodes) keepRecoveryCodes(r.session, added.recoveryCodes);
      return redirectWithFlash(app, reply, r.session, base, { notice });
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'invalid')
        return page(reply, r, { status: 422, errors: [{ field: fieldOf(err, 'webauthn'), message: err.message }] });
      throw err;
    }
  });

  app.post(`${base}/webauthn/:id/rename`, RENAME_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const id = idOf(request);
    try {
      await renameWebAuthnCredential(
        db,
        r.user.id,
        id,
        stringParam((request.body ?? {}) as Record<string, unknown>, 'name') ?? '',
        auditActor(r.user, request),
      );
      return redirectWithFlash(app, reply, r.session, base, { notice: 'Renamed.' });
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'invalid')
        return page(reply, r, {
          status: 422,
          errors: [{ field: fieldOf(err, 'webauthn_rename', id), message: err.message }],
        });
      if (err instanceof DomainError && err.kind === 'not_found')
        return page(reply, r, { status: 404, flash: { alert: err.message } });
      throw err;
    }
  });

  app.post(`${base}/webauthn/:id/delete`, REMOVE_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const id = idOf(request);
    const password = stringParam((request.body ?? {}) as Record<string, unknown>, 'current_password') ?? '';
    const refused = await currentPasswordRefusal(db, request, reply, r.user, password, `webauthn_remove_${id}`);
    if (refused) return page(reply, r, refused);
    try {
      const removed = await removeWebAuthnCredential(db, r.user.id, { id }, auditActor(r.user, request));
      return redirectWithFlash(app, reply, r.session, base, { notice: `“${removed.name}” was removed.` });
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'not_found')
        return page(reply, r, { status: 404, flash: { alert: err.message } });
      throw err;
    }
  });
}
