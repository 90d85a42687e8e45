// /-/profile/two_factor_auth: enrol (QR code as SVG plus the secret in text, confirmed by a TOTP
// code), ten recovery codes shown once, regenerate them, disable — the last two with the current
// password. The secret being enrolled waits in the session, sealed with the session id.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { renderSVG } from 'uqr';
import type { AppContext } from '../../app-context';
import { DomainError } from '../../domain/errors';
import { newTotpSecret, otpauthUri } from '../../domain/totp';
import {
  disableTwoFactor,
  enableTwoFactor,
  regenerateRecoveryCodes,
  remainingRecoveryCodes,
} from '../../domain/two-factor';
import { twoFactorEnabled } from '../../domain/users';
import { formRouteOptions } from '../../http/form-body';
import { stringParam } from '../../shared/params';
import { Button, CsrfField, type FieldError, type Flash, ShownOnce, TextField } from '../../pages/components';
import type { WebSession } from '../../domain/sessions';
import { safeReturnTo } from '../../pages/current-user';
import { sendErrorPage } from '../../pages/error-page';
import { seal, unseal } from '../../pages/flash';
import { TOTP_CODE_WORDS, wordsFor } from '../../pages/form-words';
import * as React from '../../pages/jsx';
import { Layout, PRODUCT_NAME, seeOther, sendPage } from '../../pages/layout';
import { pageNumberOf, pageWindow } from '../../pages/pagination';
import { listWebAuthnCredentialsPage } from '../../domain/webauthn';
import { WEBAUTHN_SCRIPT_PATH } from '../../pages/webauthn-script';
import { WebAuthnPanel, webAuthnAccountRoutes } from './webauthn';
import {
  type AccountRequest,
  accountGuardFor,
  auditActor,
  currentPasswordRefusal,
  mailSettingsOf,
  pendingFlash,
  redirectWithFlash,
} from './account';

export const TWO_FACTOR_PATH = '/-/profile/two_factor_auth';
const BASE = TWO_FACTOR_PATH;
const PIN_FORM = formRouteOptions({ strings: ['pin_code'] });
const PASSWORD_FORM = formRouteOptions({ strings: ['current_password'] });
const EMPTY_FORM = formRouteOptions({ strings: [] });
export const ENROLLED = 'You have set up two-factor authentication. Save your recovery codes.';
/** How long new recovery codes stay on the page (and downloadable) without "I have saved them". */
const CODES_KEPT_MS = 15 * 60 * 1000;

/** Group a base32 secret in fours, as authenticator apps show it for typing. */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, '$1 ');

/** Keep codes just generated in the session (sealed) until the person has saved them. */
export function keepRecoveryCodes(session: WebSession, codes: string[]): void {
  session.data.recovery_codes = { sealed: seal(session, codes), until: Date.now() + CODES_KEPT_MS };
}

function savedCodes(session: WebSession): string[] | undefined {
  const kept = session.data.recovery_codes;
  if (!kept || kept.until < Date.now()) return undefined;
  const codes = unseal(session, kept.sealed);
  return Array.isArray(codes) && codes.every((c) => typeof c === 'string') ? codes : undefined;
}

const recoveryCodesText = (username: string, codes: string[]) =>
  [
    `${PRODUCT_NAME} recovery codes for ${username}`,
    'Each code signs you in once if you lose your authenticator. Keep them somewhere safe.',
    '',
    ...codes,
    '',
  ].join('\n');

/** The codes just generated: copy, download, print, and the "I have saved them" step. */
function RecoveryCodes({ codes, csrf }: { codes: string[]; csrf: string }): React.Html {
  return (
    <ShownOnce id="recovery-codes" title="Save your recovery codes">
      <p>
        Each code signs you in once if you lose your device. Save them somewhere safe now — a password manager, or
        printed — then confirm below. After that they are not shown again.
      </p>
      <ul class="codes" id="recovery-codes-list">
        {codes.map((c) => [
          <li>
            <code class="secret">{c}</code>
          </li>,
          '\n',
        ])}
      </ul>
      <div class="actions">
        <button type="button" class="button" data-copy="#recovery-codes-list" hidden>
          Copy codes
        </button>
        <a class="button" href={`${BASE}/recovery_codes.txt`} download="lanyard-recovery-codes.txt">
          Download codes (.txt)
        </a>
        <button type="button" class="button" data-print hidden>
          Print
        </button>
      </div>
      <form method="post" action={`${BASE}/codes/saved`} class="saved-step">
        <CsrfField token={csrf} />
        <Button id="codes-saved">I have saved my recovery codes</Button>
      </form>
    </ShownOnce>
  );
}

/**
 * Enrol an authenticator: the QR code, the key in text and the otpauth:// URI (each with a copy
 * button), and the form that confirms a code. The account page and the required enrolment at
 * sign-in (sign-in.tsx) both show it.
 */
export function EnrolmentPanel(props: {
  secret: string;
  email: string;
  csrf: string;
  action: string;
  error?: string;
}): React.Html {
  const uri = otpauthUri(props.secret, props.email, PRODUCT_NAME);
  return (
    <section class="panel" aria-labelledby="enrol-title">
      <h2 id="enrol-title">Register a one-time password authenticator</h2>
      <p>Use an app on your phone (for example a TOTP authenticator) to scan this QR code.</p>
      <div class="qr" role="img" aria-label="QR code of your two-factor secret">
        {React.trustedHtml(renderSVG(uri, { border: 1 }))}
      </div>
      <p>Can’t scan the code? Enter this key in your app, time-based:</p>
      <div class="copyable">
        <code class="secret" id="otp-secret">
          {grouped(props.secret)}
        </code>
        <button type="button" class="button small" data-copy="#otp-secret" hidden>
          Copy key
        </button>
      </div>
      <details>
        <summary>Show the otpauth:// link instead</summary>
        <div class="copyable">
          <code class="secret" id="otpauth-uri">
            {uri}
          </code>
          <button type="button" class="button small" data-copy="#otpauth-uri" hidden>
            Copy link
          </button>
        </div>
      </details>
      <form method="post" action={props.action}>
        <CsrfField token={props.csrf} />
        <TextField
          id="pin_code"
          name="pin_code"
          label="Code from your authenticator app"
          hint="The 6-digit code your app shows now."
          inputmode="numeric"
          autocomplete="one-time-code"
          error={props.error}
          required
        />
        <div class="actions">
          <Button>Register with two-factor app</Button>
        </div>
      </form>
    </section>
  );
}

export async function twoFactorRoutes(app: FastifyInstance, context: AppContext) {
  const { db } = context;
  const guard = accountGuardFor(app);

  /** The secret being enrolled: the one in the session, or a new one kept there. */
  async function pendingSecret(r: AccountRequest): Promise<string> {
    const sealed = r.session.data.pending_otp;
    const existing = sealed ? unseal(r.session, sealed) : undefined;
    if (typeof existing === 'string') return existing;
    const secret = newTotpSecret();
    r.session.data.pending_otp = seal(r.session, secret);
    await app.sessions.save(r.session);
    return secret;
  }

  async function page(
    reply: FastifyReply,
    r: AccountRequest,
    opts: { status?: number; errors?: FieldError[]; flash?: Flash; page?: number } = {},
  ) {
    const pending = opts.flash ? { flash: opts.flash } : await pendingFlash(app, r.session, BASE);
    const codes = savedCodes(r.session);
    const keysPage = opts.page ?? 1;
    const err = (field: string) => opts.errors?.find((e) => e.field === field)?.message;
    const enabled = twoFactorEnabled(r.user);
    const totpEnabled = r.user.otp_secret !== null;
    const keys = (
      <WebAuthnPanel
        base={BASE}
        csrf={r.csrf}
        credentials={await listWebAuthnCredentialsPage(db, r.user.id, pageWindow(keysPage))}
        page={keysPage}
        errors={opts.errors}
      />
    );
    let body: React.Html = React.EMPTY;
    if (enabled) {
      const remaining = await remainingRecoveryCodes(db, r.user.id);
      body = (
        <>
          {codes ? <RecoveryCodes codes={codes} csrf={r.csrf} /> : null}
          <section class="panel" aria-labelledby="status-title">
            <h2 id="status-title">Status</h2>
            <p id="two-factor-status">
              Two-factor authentication is <strong>enabled</strong>. {remaining} of 10 recovery codes remain unused.
            </p>
            {remaining === 0 && !codes ? (
              <p class="flash flash-alert" id="no-recovery-codes">
                You have no recovery codes left. If you lose your device you cannot sign in: generate new codes below
                now.
              </p>
            ) : null}
          </section>
          <section class="panel" aria-labelledby="regenerate-title">
            <h2 id="regenerate-title">Regenerate recovery codes</h2>
            <p>New codes replace all of your current ones.</p>
            <form method="post" action={`${BASE}/codes`}>
              <CsrfField token={r.csrf} />
              <TextField
                id="regenerate_current_password"
                name="current_password"
                type="password"
                label="Current password"
                autocomplete="current-password"
                error={err('regenerate_current_password')}
                required
              />
              <div class="actions">
                <Button variant="secondary">Regenerate recovery codes</Button>
              </div>
            </form>
          </section>
          {keys}
          <section class="panel" aria-labelledby="disable-title">
            <h2 id="disable-title">Disable two-factor authentication</h2>
            <p>Your account will then be protected by your password alone.</p>
            <form method="post" action={`${BASE}/disable`}>
              <CsrfField token={r.csrf} />
              <TextField
                id="disable_current_password"
                name="current_password"
                type="password"
                label="Current password"
                autocomplete="current-password"
                error={err('disable_current_password')}
                required
              />
              <div class="actions">
                <Button variant="danger">Disable two-factor authentication</Button>
              </div>
            </form>
          </section>
        </>
      );
    }
    if (!totpEnabled) {
      const secret = await pendingSecret(r);
      body = (
        <>
          {body}
          {enabled ? null : keys}
          <EnrolmentPanel secret={secret} email={r.user.email} csrf={r.csrf} action={BASE} error={err('pin_code')} />
        </>
      );
    }
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Two-factor authentication"
        user={r.user}
        csrf={r.csrf}
        section={BASE}
        flash={pending.flash}
        errors={opts.errors}
        lead="Protect your account with a code from your phone in addition to your password."
        scripts={[WEBAUTHN_SCRIPT_PATH]}
      >
        {body}
      </Layout>,
    );
  }

  /** The current password (sign-in limits apply); the page with the refusal when it is wrong. */
  async function passwordOk(
    request: FastifyRequest,
    reply: FastifyReply,
    r: AccountRequest,
    field: string,
  ): Promise<boolean> {
    const password = stringParam((request.body ?? {}) as Record<string, unknown>, 'current_password') ?? '';
    const refused = await currentPasswordRefusal(db, request, reply, r.user, password, field);
    if (refused) await page(reply, r, refused);
    return !refused;
  }

  app.get(BASE, async (request, reply) => {
    const r = await guard(request, reply);
    return r ? page(reply, r, { page: pageNumberOf(request.query) }) : reply;
  });

  // The codes just generated as a .txt file: only until the person says they have saved them.
  app.get(`${BASE}/recovery_codes.txt`, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const codes = savedCodes(r.session);
    if (!codes)
      return sendErrorPage(reply, {
        status: 404,
        title: 'Recovery codes no longer available',
        message:
          'Recovery codes can be downloaded only right after they are generated. Generate new ones if you did not save them.',
        back: { href: BASE, label: 'Back to two-factor authentication' },
      });
    return reply
      .code(200)
      .headers({
        'content-type': 'text/plain; charset=utf-8',
        'content-disposition': 'attachment; filename="lanyard-recovery-codes.txt"',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      })
      .send(recoveryCodesText(r.user.username, codes));
  });

  // "I have saved them": the codes leave the session; on to where sign-in was going, if anywhere.
  app.post(`${BASE}/codes/saved`, EMPTY_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const next = safeReturnTo(r.session.data.return_to);
    delete r.session.data.recovery_codes;
    delete r.session.data.return_to;
    await app.sessions.save(r.session);
    return seeOther(reply, next ?? BASE);
  });

  app.post(BASE, PIN_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    if (r.user.otp_secret !== null)
      return page(reply, r, { status: 409, flash: { alert: 'Two-factor authentication is already enabled.' } });
    const secret = await pendingSecret(r);
    const pin = stringParam((request.body ?? {}) as Record<string, unknown>, 'pin_code') ?? '';
    try {
      const ring = await app.sessions.keyRing().load();
      const codes = await enableTwoFactor(db, ring, r.user.id, secret, pin, auditActor(r.user, request));
      delete r.session.data.pending_otp;
      keepRecoveryCodes(r.session, codes);
      return redirectWithFlash(app, reply, r.session, BASE, { notice: ENROLLED });
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'invalid')
        return page(reply, r, {
          status: 422,
          errors: [{ field: 'pin_code', message: wordsFor(TOTP_CODE_WORDS, pin.trim() === '' ? 'blank' : 'invalid') }],
        });
      throw err;
    }
  });

  app.post(`${BASE}/codes`, PASSWORD_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    if (!twoFactorEnabled(r.user))
      return page(reply, r, { status: 409, flash: { alert: 'Enable two-factor authentication first.' } });
    if (!(await passwordOk(request, reply, r, 'regenerate_current_password'))) return reply;
    const codes = await regenerateRecoveryCodes(db, r.user.id, {
      ...auditActor(r.user, request),
      mail: mailSettingsOf(context.config),
    });
    keepRecoveryCodes(r.session, codes);
    return redirectWithFlash(app, reply, r.session, BASE, { notice: 'New recovery codes were generated.' });
  });

  app.post(`${BASE}/disable`, PASSWORD_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    if (!twoFactorEnabled(r.user))
      return page(reply, r, { status: 409, flash: { alert: 'Two-factor authentication is not enabled.' } });
    if (!(await passwordOk(request, reply, r, 'disable_current_password'))) return reply;
    await disableTwoFactor(db, r.user.id, { ...auditActor(r.user, request), mail: mailSettingsOf(context.config) });
    delete r.session.data.recovery_codes;
    return redirectWithFlash(app, reply, r.session, BASE, { notice: 'Two-factor authentication has been disabled.' });
  });

  await webAuthnAccountRoutes(app, context, BASE, page);
}
