// Back-channel logout and the active-sessions page in a real browser (Debian's chromium) against the
// real server. Chromium signs alice in to two relying parties, each with a back-channel endpoint on
// a small HTTP server here; she signs out from the first with id_token_hint and
// post_logout_redirect_uri (openid-client builds the URL from discovery); the Lanyard session ends
// and the second party receives a logout token that verifies against the JWKS (jose, fetched over
// HTTP) with the sid of its own ID token. The sessions page, axe-clean at 390 and 1280 px, revokes
// another browser's session (confirm page) and the other party hears of it too.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signingKeyPolicy } from '../../service/config';
import { fileSigningKeySource } from '../../service/local/signing-key-file';
import { drainLogoutsOnce } from '../../service/mail/backchannel-sender';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';
import {
  chromiumAvailable as available,
  inspectPage,
  launchChromium,
  listenOnLoopback,
  press,
} from '../support/chromium';
import { resetDatabase } from '../support/db';

const f = useFixture();
let browser: Browser;
let base: string;
let rpServer: http.Server;
let rpBase: string;
/** Logout tokens received, by back-channel path. */
const tokens: Array<{ path: string; token: string }> = [];

beforeAll(async () => {
  if (!available) return;
  base = await listenOnLoopback(f);
  rpServer = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      if (req.method === 'POST' && req.url?.startsWith('/backchannel/')) {
        tokens.push({ path: req.url, token: new URLSearchParams(body).get('logout_token') ?? '' });
        return res.writeHead(200).end();
      }
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end('<!DOCTYPE html><title>rp</title><p>ok</p>');
    });
  });
  await new Promise<void>((resolve) => rpServer.listen(0, '127.0.0.1', resolve));
  rpBase = `http://127.0.0.1:${(rpServer.address() as AddressInfo).port}`;
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (rpServer ? rpServer.close(r) : r(undefined)));
});

beforeEach(async () => {
  if (!available) return;
  await resetDatabase(f.db);
  tokens.length = 0;
  await makeUser(f.db, 'alice');
});

type Rp = Awaited<ReturnType<typeof makeApp>>;

function makeRp(name: string): Promise<Rp> {
  return makeApp(f.db, {
    name,
    scopes: 'openid',
    trusted: true,
    redirectUris: [`${rpBase}/callback`],
    postLogoutRedirectUris: [`${rpBase}/bye`],
    backchannelLogoutUri: `${rpBase}/backchannel/${name.replace(/\W/g, '')}`,
    backchannelLogoutSessionRequired: true,
  });
}

/** Sign alice in to the relying party in this page (the code flow); its ID token and that token's sid. */
async function signInToRp(page: Page, app: Rp): Promise<{ idToken: string; sid: string }> {
  const q = new URLSearchParams({
    client_id: app.clientId,
    redirect_uri: `${rpBase}/callback`,
    response_type: 'code',
    scope: 'openid',
    state: 's',
  });
  await page.goto(`${base}/oauth/authorize?${q}`);
  if (new URL(page.url()).pathname === '/users/sign_in') {
    await page.fill('input[name="user[login]"]', 'alice');
    await page.fill('input[name="user[password]"]', PASSWORD);
    await page.click('button[type="submit"]');
  }
  await page.waitForURL((u) => u.href.startsWith(rpBase));
  const code = new URL(page.url()).searchParams.get('code')!;
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { ...FORM, authorization: basic(app.clientId, app.secret) },
    body: form({ grant_type: 'authorization_code', code, redirect_uri: `${rpBase}/callback` }),
  });
  const idToken = ((await res.json()) as { id_token: string }).id_token;
  return { idToken, sid: JSON.parse(Buffer.from(idToken.split('.')[1], 'base64url').toString()).sid };
}

/** What the server's sender loop does each round: sign and POST the queued logout tokens. */
const drain = () =>
  drainLogoutsOnce({
    db: f.db,
    signingKeys: fileSigningKeySource(f.config.home, signingKeyPolicy(f.config)),
    issuer: f.config.publicUrl,
    maxAttempts: 3,
    concurrency: 2,
  });

/** The relying party's check (Back-Channel Logout 1.0 §2.6), against the JWKS fetched from discovery. */
async function verifyAsRp(token: string, app: Rp) {
  const discovery = (await (await fetch(`${base}/.well-known/openid-configuration`)).json()) as {
    jwks_uri: string;
    issuer: string;
    backchannel_logout_supported: boolean;
  };
  expect(discovery.backchannel_logout_supported).toBe(true);
  const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(discovery.jwks_uri)), {
    issuer: discovery.issuer,
    audience: app.clientId,
    typ: 'logout+jwt',
    algorithms: ['RS256'],
  });
  expect(payload.nonce).toBeUndefined();
  return payload;
}

const sessionCount = async () => (await f.db.selectFrom('web_sessions').select('id_digest').execute()).length;

describe.skipIf(!available)('back-channel logout in chromium', () => {
  it('signing out of one party with id_token_hint signs the other out through its back channel', async () => {
    const one = await makeRp('RP one');
    const two = await makeRp('RP two');
    const bystander = await makeRp('RP three'); // registered, never used in this session
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      const first = await signInToRp(page, one);
      const second = await signInToRp(page, two);
      expect(second.sid).toBe(first.sid);
      const client = await import('openid-client');
      const metadata = (await (
        await fetch(`${base}/.well-known/openid-configuration`)
      ).json()) as import('openid-client').ServerMetadata;
      const config = new client.Configuration(metadata, one.clientId, one.secret);
      client.allowInsecureRequests(config);
      const url = client.buildEndSessionUrl(config, {
        id_token_hint: first.idToken,
        post_logout_redirect_uri: `${rpBase}/bye`,
        state: 'done',
      });
      expect(url.origin + url.pathname).toBe(`${base}/oauth/logout`);
      await page.goto(url.href);
      expect(page.url()).toBe(`${rpBase}/bye?state=done`);
      expect(await sessionCount()).toBe(0);

      expect(await drain()).toEqual({ claimed: 2, sent: 2, retried: 0, failed: 0 });
      expect(tokens.map((t) => t.path).sort()).toEqual(['/backchannel/RPone', '/backchannel/RPtwo']);
      const toTwo = tokens.find((t) => t.path === '/backchannel/RPtwo')!;
      const payload = await verifyAsRp(toTwo.token, two);
      expect(payload).toMatchObject({
        iss: base,
        aud: two.clientId,
        sid: second.sid,
        events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
      });
      // The token for one party is not accepted by another.
      await expect(verifyAsRp(toTwo.token, one)).rejects.toThrow(/aud/);
      expect(tokens.some((t) => t.path.includes(bystander.application.name.replace(/\W/g, '')))).toBe(false);
    } finally {
      await context.close();
    }
  });

  it('the active-sessions page (axe-clean at 390 and 1280 px) revokes another browser; its party hears of it', async () => {
    const rp = await makeRp('RP one');
    const otherContext = await browser.newContext({
      userAgent:
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
    });
    const context = await browser.newContext();
    try {
      const phone = await signInToRp(await otherContext.newPage(), rp);
      const page = await context.newPage();
      await signInToRp(page, rp);
      await page.goto(`${base}/-/user_settings/active_sessions`);
      expect(await page.title()).toContain('Active sessions');
      expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('Active sessions');
      const rows = page.locator('#sessions tbody tr');
      expect(await rows.count()).toBe(2);
      expect(await page.locator(`#session-${phone.sid}`).textContent()).toContain('Safari 17 on iOS 17');
      expect(await page.locator('#sessions').textContent()).toContain('This session');
      await inspectPage(page, 'active-sessions');

      await page.locator(`#session-${phone.sid} a`, { hasText: 'Revoke' }).click();
      expect(new URL(page.url()).pathname).toBe(`/-/user_settings/active_sessions/${phone.sid}/revoke`);
      await inspectPage(page, 'active-sessions-revoke');
      await press(page, 'Revoke');
      expect(new URL(page.url()).pathname).toBe('/-/user_settings/active_sessions');
      expect(await page.locator('body').textContent()).toContain('The session was revoked.');
      expect(await rows.count()).toBe(1);

      expect(await drain()).toMatchObject({ sent: 1 });
      expect(await verifyAsRp(tokens[0].token, rp)).toMatchObject({ sid: phone.sid });
      // The revoked browser is signed out.
      const phonePage = await otherContext.newPage();
      await phonePage.goto(`${base}/-/user_settings/active_sessions`);
      expect(new URL(phonePage.url()).pathname).toBe('/users/sign_in');
    } finally {
      await context.close();
      await otherContext.close();
    }
  });
});
