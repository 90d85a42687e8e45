// Passkeys in Debian's chromium with the DevTools virtual authenticator (CTAP2, internal transport,
// resident keys, user verification) against the real server over real HTTP: register a key on the
// two-factor page; sign in with password + key; passwordless with "Sign in with a passkey"; the
// sign-in page starting the browser's autofill request (conditional UI); a replayed assertion
// (captured, resent with fetch) refused; another account's authenticator refused for this one; a
// removed key refused; the messages for a browser without WebAuthn and a cancelled request. The
// ID token's amr/acr of each path is checked by oauth4webapi. Every page: axe-core in light and
// dark at 390 and 1280 px. The RP ID is `localhost` (WebAuthn refuses IP addresses).
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chromiumAvailable as available,
  inspectPage,
  launchChromium,
  press,
  startLandingServer,
} from '../support/chromium';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';
import type http from 'node:http';

const f = useFixture();
let browser: Browser;
let base: string;
let landing: http.Server;
let callbackBase: string;

beforeAll(async () => {
  if (!available) return;
  // Both loopback addresses: Chromium and Node may resolve localhost to either.
  await f.app.listen({ host: 'localhost', port: 0 });
  base = `http://localhost:${(f.app.server.address() as AddressInfo).port}`;
  f.config.publicUrl = base;
  ({ server: landing, url: callbackBase } = await startLandingServer('callback'));
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (landing ? landing.close(r) : r(undefined)));
});

/** A page with its own virtual authenticator (CTAP2 platform authenticator with UV). */
async function pageWithAuthenticator(): Promise<{ context: BrowserContext; page: Page; cdp: CDPSession }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { context, page, cdp };
}

const scriptReady = (page: Page) => page.waitForSelector('html[data-webauthn-ready]', { state: 'attached' });

async function passwordSignIn(page: Page, login: string) {
  await page.goto(`${base}/users/sign_in`);
  await scriptReady(page);
  await page.fill('#user_login', login);
  await page.fill('#user_password', PASSWORD);
  await press(page, 'Sign in');
}

async function signOut(page: Page) {
  await page.goto(`${base}/users/sign_out`);
  await press(page, 'Sign out');
}

/** The amr and acr of an ID token for this browser's session, through oauth4webapi. */
async function signedInWith(page: Page, clientId: string, secret: string) {
  const oauth = await import('oauth4webapi');
  const opts = { [oauth.allowInsecureRequests]: true } as const;
  const issuer = new URL(base);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, opts));
  const client = { client_id: clientId };
  const verifier = oauth.generateRandomCodeVerifier();
  const nonce = oauth.generateRandomNonce();
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: clientId,
    redirect_uri: `${callbackBase}/cb`,
    response_type: 'code',
    scope: 'openid',
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
  }).toString();
  await page.goto(url.href);
  const callback = new URL(page.url());
  expect(callback.origin).toBe(callbackBase);
  const params = oauth.validateAuthResponse(as, client, callback);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.ClientSecretPost(secret),
    params,
    `${callbackBase}/cb`,
    verifier,
    opts,
  );
  const result = await oauth.processAuthorizationCodeResponse(as, client, response, {
    expectedNonce: nonce,
    requireIdToken: true,
  });
  const claims = oauth.getValidatedIdTokenClaims(result)!;
  return { amr: claims.amr, acr: claims.acr };
}

describe.skipIf(!available)('passkeys in chromium', () => {
  it('registers a key, signs in with password + key and passwordless, refuses replays, other accounts and removed keys', async () => {
    await makeUser(f.db, 'alice');
    await makeUser(f.db, 'bob');
    const app = await makeApp(f.db, {
      name: 'Wiki',
      redirectUris: [`${callbackBase}/cb`],
      scopes: 'openid',
      trusted: true,
    });
    const { context, page } = await pageWithAuthenticator();
    try {
      // The sign-in page: the script loaded, the username field offers passkeys (conditional UI),
      // and the page has asked the server for an autofill request's challenge.
      await page.goto(`${base}/users/sign_in`);
      await scriptReady(page);
      expect(await page.getAttribute('html', 'data-webauthn-ready')).toBe('yes');
      expect(await page.getAttribute('#user_login', 'autocomplete')).toBe('username webauthn');
      expect(await page.evaluate('PublicKeyCredential.isConditionalMediationAvailable()')).toBe(true);
      await expect
        .poll(async () =>
          Number(
            (
              await f.db
                .selectFrom('webauthn_challenges')
                .select((eb) => eb.fn.countAll<string>().as('n'))
                .where('purpose', '=', 'passwordless')
                .executeTakeFirstOrThrow()
            ).n,
          ),
        )
        .toBeGreaterThan(0);
      await inspectPage(page, 'passkeys-sign-in');

      // Password alone: amr pwd.
      await passwordSignIn(page, 'alice');
      expect(new URL(page.url()).pathname).toBe('/-/profile');
      expect(await signedInWith(page, app.clientId, app.secret)).toEqual({ amr: ['pwd'], acr: 'pwd' });

      // Register.
      await page.goto(`${base}/-/profile/two_factor_auth`);
      await scriptReady(page);
      await inspectPage(page, 'passkeys-two-factor-none');
      await page.fill('#webauthn_name', 'Laptop');
      await press(page, 'Add passkey or security key');
      expect(await page.textContent('.flash-notice')).toContain(
        'Your security key “Laptop” was added. Save your recovery codes.',
      );
      expect(await page.locator('#recovery-codes code').count()).toBe(10);
      expect(await page.textContent('#webauthn-credentials tbody')).toMatch(/Laptop\s*Security key/);
      await inspectPage(page, 'passkeys-two-factor-list');

      // Conditional UI: signed out, the sign-in page's autofill request gets the passkey (the
      // virtual authenticator picks it as a person would from the username field's suggestions)
      // and signs in without a password: amr hwk user mfa.
      await signOut(page);
      await page.waitForURL((u) => u.pathname === '/-/profile');
      expect(await signedInWith(page, app.clientId, app.secret)).toEqual({ amr: ['hwk', 'user', 'mfa'], acr: 'phrh' });

      // From here on the autofill request is off, so the other paths can be driven by hand.
      await page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = async () => false');

      // Password + security key: amr pwd hwk user mfa.
      await signOut(page);
      await passwordSignIn(page, 'alice');
      expect(await page.textContent('h1')).toBe('Two-factor authentication');
      await inspectPage(page, 'passkeys-second-factor');
      await press(page, 'Use your passkey or security key');
      expect(new URL(page.url()).pathname).toBe('/-/profile');
      expect(await signedInWith(page, app.clientId, app.secret)).toEqual({
        amr: ['pwd', 'hwk', 'user', 'mfa'],
        acr: 'phrh',
      });

      // Passwordless, capturing what the form posts.
      await signOut(page);
      await page.goto(`${base}/users/sign_in`);
      await scriptReady(page);
      let captured: string | undefined;
      page.on('request', (r) => {
        if (r.method() === 'POST' && r.url() === `${base}/users/sign_in/webauthn`) captured = r.postData() ?? undefined;
      });
      await press(page, 'Sign in with a passkey');
      expect(new URL(page.url()).pathname).toBe('/-/profile');
      expect(await signedInWith(page, app.clientId, app.secret)).toEqual({ amr: ['hwk', 'user', 'mfa'], acr: 'phrh' });

      // The captured assertion resent with fetch, from a new anonymous session: refused.
      await signOut(page);
      await page.goto(`${base}/users/sign_in`);
      const replay = (await page.evaluate(`(async () => {
        const params = new URLSearchParams(${JSON.stringify(captured!)});
        params.set('authenticity_token', document.querySelector('input[name="authenticity_token"]').value);
        const res = await fetch('/users/sign_in/webauthn', { method: 'POST', body: params, redirect: 'manual' });
        return { status: res.status, text: await res.text() };
      })()`)) as { status: number; text: string };
      expect(replay.status).toBe(401);
      expect(replay.text).toContain('This sign-in request has expired or was already used. Try again.');

      // Bob's own authenticator (another browser), asked with Alice's second-factor challenge.
      const bob = await pageWithAuthenticator();
      try {
        await passwordSignIn(bob.page, 'bob');
        await bob.page.goto(`${base}/-/profile/two_factor_auth`);
        await scriptReady(bob.page);
        await bob.page.fill('#webauthn_name', 'Bob key');
        await press(bob.page, 'Add passkey or security key');
        await passwordSignIn(page, 'alice');
        const options = await page.evaluate(`(async () => {
          const token = document.querySelector('input[name="authenticity_token"]').value;
          const res = await fetch('/users/sign_in/webauthn/options', {
            method: 'POST',
            body: new URLSearchParams({ authenticity_token: token, purpose: 'second_factor' }),
          });
          return res.json();
        })()`);
        // Bob's browser answers it with his discoverable credential (no allow list: any of his).
        const bobsAssertion = (await bob.page.evaluate(`(async (o) => {
          const bytes = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
          const b64 = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
          const cred = await navigator.credentials.get({
            publicKey: { challenge: bytes(o.challenge), rpId: o.rpId, userVerification: 'preferred' },
          });
          const r = cred.response;
          return JSON.stringify({
            id: cred.id,
            rawId: b64(cred.rawId),
            type: cred.type,
            response: {
              clientDataJSON: b64(r.clientDataJSON),
              authenticatorData: b64(r.authenticatorData),
              signature: b64(r.signature),
            },
            clientExtensionResults: {},
          });
        })(${JSON.stringify(options)})`)) as string;
        const refused = (await page.evaluate(`(async () => {
          const token = document.querySelector('input[name="authenticity_token"]').value;
          const res = await fetch('/users/sign_in/webauthn', {
            method: 'POST',
            body: new URLSearchParams({ authenticity_token: token, purpose: 'second_factor', credential: ${JSON.stringify(bobsAssertion)} }),
          });
          return { status: res.status, text: await res.text() };
        })()`)) as { status: number; text: string };
        expect(refused.status).toBe(401);
        expect(refused.text).toContain('This passkey or security key belongs to another account.');
      } finally {
        await bob.context.close();
      }

      // Alice finishes with her own key, removes it (current password), and it no longer signs in.
      await page.reload();
      await scriptReady(page);
      await press(page, 'Use your passkey or security key');
      await page.goto(`${base}/-/profile/two_factor_auth`);
      await page.click('#webauthn-credentials summary');
      await page.fill('[id^="webauthn_remove_"]', PASSWORD);
      await press(page, 'Remove Laptop');
      expect(await page.textContent('.flash-notice')).toContain('“Laptop” was removed.');
      await signOut(page);
      await page.goto(`${base}/users/sign_in`);
      await scriptReady(page);
      await press(page, 'Sign in with a passkey');
      expect(await page.textContent('.flash-alert')).toContain('This passkey or security key is not registered here.');
      await inspectPage(page, 'passkeys-refused');
    } finally {
      await context.close();
    }
  }, 240_000);

  it('clear messages: a browser without WebAuthn, and a cancelled request', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const none = await context.newPage();
      await none.addInitScript('delete window.PublicKeyCredential');
      await none.goto(`${base}/users/sign_in`);
      await scriptReady(none);
      expect(await none.getAttribute('html', 'data-webauthn-ready')).toBe('unsupported');
      await none.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await expect
        .poll(() => none.textContent('#passkey-error'))
        .toBe('This browser does not support passkeys or security keys. Use another browser, or sign in another way.');
      expect(await none.isVisible('#passkey-error')).toBe(true);

      const cancelled = await context.newPage();
      await cancelled.addInitScript(
        "navigator.credentials.get = () => Promise.reject(new DOMException('The operation either timed out or was not allowed.', 'NotAllowedError'))",
      );
      await cancelled.goto(`${base}/users/sign_in`);
      await scriptReady(cancelled);
      await cancelled.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await expect
        .poll(() => cancelled.textContent('#passkey-error'))
        .toBe('The request was cancelled or timed out. Try again, or sign in another way.');
      await inspectPage(cancelled, 'passkeys-cancelled');
    } finally {
      await context.close();
    }
  }, 120_000);
});
