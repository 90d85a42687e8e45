// Unmodified OpenID Connect relying parties against the real server over real HTTP on real
// PostgreSQL: openid-client 6 (certified RP library) with the sign-in and consent done in
// Debian's chromium (an HTTP-level browser session when chromium is not installed), and
// oauth4webapi's OIDC helpers. Each runs discovery → code + PKCE + nonce → ID token validation →
// userinfo → refresh (a new ID token).
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpSession, csrfOf, hiddenFields } from '../oauth/support/http-session';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);

const f = useFixture({ config: { home: fs.mkdtempSync('/tmp/lanyard-oidc-e2e-') } });
let base: string;
let callbackBase: string;
let target: http.Server;
let browser: Browser | undefined;

beforeAll(async () => {
  await f.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(f.app.server.address() as AddressInfo).port}`;
  f.config.publicUrl = base; // the issuer is only known once listening
  target = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('callback'));
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  callbackBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  if (haveChromium) {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-sync'],
      timeout: 30_000,
    });
  } else {
    console.warn(`[e2e] no chromium at ${CHROMIUM}: the sign-in runs as an HTTP-level browser session`);
  }
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => target.close(r));
});

/** The user's part: sign in and approve, in chromium when available; returns the callback URL. */
async function userSignsInAndApproves(authorizationUrl: URL, login: string): Promise<URL> {
  if (browser) {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(authorizationUrl.href);
      expect(new URL(page.url()).pathname).toBe('/users/sign_in');
      await page.fill('input[name="user[login]"]', login);
      await page.fill('input[name="user[password]"]', PASSWORD);
      await page.click('button[type="submit"]');
      await page.waitForURL((u) => u.pathname === '/oauth/authorize');
      expect(await page.textContent('#scopes')).toContain('Confirm who you are');
      await page.getByRole('button', { name: 'Authorize' }).click();
      await page.waitForURL((u) => u.href.startsWith(callbackBase));
      return new URL(page.url());
    } finally {
      await context.close();
    }
  }
  return httpSignIn(authorizationUrl, login);
}

async function httpSignIn(authorizationUrl: URL, login: string): Promise<URL> {
  const session = new HttpSession(base);
  const first = await session.request(authorizationUrl.pathname + authorizationUrl.search);
  expect(first).toMatchObject({ status: 302, location: '/users/sign_in' });
  const form = await session.request('/users/sign_in');
  const signedIn = await session.request('/users/sign_in', {
    form: { authenticity_token: csrfOf(form.body), 'user[login]': login, 'user[password]': PASSWORD },
  });
  expect(signedIn.status).toBe(302);
  const consent = await session.request(signedIn.location!);
  expect(consent.status).toBe(200);
  const back = await session.request('/oauth/authorize', {
    form: { ...hiddenFields(consent.body), decision: 'authorize' },
  });
  expect(back.status).toBe(302);
  return new URL(back.location!);
}

describe('openid-client 6', () => {
  it(`discovery → code + PKCE + nonce (sign-in in ${haveChromium ? 'chromium' : 'an HTTP session'}) → ID token → userinfo → refresh`, async () => {
    const client = await import('openid-client');
    const { user } = await makeUser(f.db, 'olivia');
    const registered = await makeApp(f.db, {
      name: 'Grafana',
      redirectUris: [`${callbackBase}/login/generic_oauth`],
      scopes: 'openid profile email',
    });
    const config = await client.discovery(
      new URL(base),
      registered.clientId,
      undefined,
      client.ClientSecretBasic(registered.secret),
      { execute: [client.allowInsecureRequests] },
    );
    expect(config.serverMetadata().issuer).toBe(base);
    expect(config.serverMetadata().userinfo_endpoint).toBe(`${base}/oauth/userinfo`);

    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: `${callbackBase}/login/generic_oauth`,
      scope: 'openid profile email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce,
      state,
    });
    const callback = await userSignsInAndApproves(url, 'olivia');

    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      expectedState: state,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({
      iss: base,
      sub: String(user.id),
      aud: registered.clientId,
      nonce,
      preferred_username: 'olivia',
      email: 'olivia@example.com',
      email_verified: true,
    });
    expect(typeof claims.auth_time).toBe('number');

    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(info).toEqual({
      sub: String(user.id),
      name: 'olivia',
      nickname: 'olivia',
      preferred_username: 'olivia',
      profile: `${base}/olivia`,
      groups: [],
      email: 'olivia@example.com',
      email_verified: true,
    });

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.id_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(refreshed.id_token).not.toBe(tokens.id_token);
    expect(refreshed.claims()).toMatchObject({ sub: String(user.id), auth_time: claims.auth_time });
  });
});

describe("oauth4webapi's OpenID Connect helpers", () => {
  it('discovery (oidc) → code + PKCE + nonce → ID token → userinfo → refresh', async () => {
    const oauth = await import('oauth4webapi');
    const { user } = await makeUser(f.db, 'oscar');
    const registered = await makeApp(f.db, {
      name: 'Backstage',
      redirectUris: [`${callbackBase}/cb`],
      scopes: 'openid profile',
    });
    const opts = { [oauth.allowInsecureRequests]: true } as const;
    const issuer = new URL(base);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, opts));
    const c = { client_id: registered.clientId };
    const auth = oauth.ClientSecretPost(registered.secret);

    const verifier = oauth.generateRandomCodeVerifier();
    const nonce = oauth.generateRandomNonce();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: c.client_id,
      redirect_uri: `${callbackBase}/cb`,
      response_type: 'code',
      scope: 'openid profile',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce,
    }).toString();
    const callback = await httpSignIn(url, 'oscar');

    const params = oauth.validateAuthResponse(as, c, callback);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      c,
      auth,
      params,
      `${callbackBase}/cb`,
      verifier,
      opts,
    );
    const result = await oauth.processAuthorizationCodeResponse(as, c, response, {
      expectedNonce: nonce,
      requireIdToken: true,
    });
    const claims = oauth.getValidatedIdTokenClaims(result)!;
    expect(claims).toMatchObject({ sub: String(user.id), nonce, nickname: 'oscar', groups_direct: [] });
    expect(claims.email).toBeUndefined(); // no email scope

    const info = await oauth.processUserInfoResponse(
      as,
      c,
      claims.sub,
      await oauth.userInfoRequest(as, c, result.access_token, opts),
    );
    expect(info).toEqual({
      sub: String(user.id),
      name: 'oscar',
      nickname: 'oscar',
      preferred_username: 'oscar',
      profile: `${base}/oscar`,
      groups: [],
    });

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      c,
      await oauth.refreshTokenGrantRequest(as, c, auth, result.refresh_token!, opts),
    );
    expect(oauth.getValidatedIdTokenClaims(refreshed)).toMatchObject({ sub: String(user.id), iss: base });
  });
});
