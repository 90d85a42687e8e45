// RP-initiated logout in a real browser (Debian's chromium via playwright-core) against the real
// server: the relying party signs the person in (code flow), openid-client builds the end-session
// URL from discovery, Chromium follows it and lands back at the registered URI with state, signed
// out of Lanyard. Without a hint: the "Sign out of Lanyard?" page, axe-clean at 390 and 1280 px.
import fs from 'node:fs';
import type http from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chromiumAvailable as available,
  launchChromium,
  listenOnLoopback,
  startLandingServer,
} from '../support/chromium';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const AXE_SOURCE = available ? fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8') : '';

const f = useFixture();
let browser: Browser;
let base: string;
let target: http.Server;
let callbackBase: string;

beforeAll(async () => {
  if (!available) return;
  base = await listenOnLoopback(f);
  ({ server: target, url: callbackBase } = await startLandingServer('rp'));
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (target ? target.close(r) : r(undefined)));
});

async function axeClean(page: Page) {
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: 844 });
    const { scrollWidth, innerWidth } = (await page.evaluate(
      '({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })',
    )) as { scrollWidth: number; innerWidth: number };
    expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
    if ((await page.evaluate('typeof window.axe')) !== 'object') await page.evaluate(AXE_SOURCE);
    const result = (await page.evaluate('window.axe.run(document)')) as { violations: Array<{ id: string }> };
    expect(result.violations.map((v) => v.id)).toEqual([]);
  }
}

/** Sign alice in to the relying party in this page; its ID token. */
async function signInToRp(page: Page, app: Awaited<ReturnType<typeof makeApp>>): Promise<string> {
  const q = new URLSearchParams({
    client_id: app.clientId,
    redirect_uri: `${callbackBase}/callback`,
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
  await page.waitForURL((u) => u.href.startsWith(callbackBase));
  const code = new URL(page.url()).searchParams.get('code')!;
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { ...FORM, authorization: basic(app.clientId, app.secret) },
    body: form({ grant_type: 'authorization_code', code, redirect_uri: `${callbackBase}/callback` }),
  });
  return ((await res.json()) as { id_token: string }).id_token;
}

async function endSessionUrl(app: Awaited<ReturnType<typeof makeApp>>, params: Record<string, string>) {
  const client = await import('openid-client');
  const metadata = (await (
    await fetch(`${base}/.well-known/openid-configuration`)
  ).json()) as import('openid-client').ServerMetadata;
  const config = new client.Configuration(metadata, app.clientId, app.secret);
  client.allowInsecureRequests(config); // the test server is plain HTTP on 127.0.0.1
  return client.buildEndSessionUrl(config, params).href;
}

/** A trusted openid relying party: its callback and its post-logout page on the target server. */
function makeRp(name: string) {
  return makeApp(f.db, {
    name,
    scopes: 'openid',
    trusted: true,
    redirectUris: [`${callbackBase}/callback`],
    postLogoutRedirectUris: [`${callbackBase}/bye`],
  });
}

describe.skipIf(!available)('RP-initiated logout in chromium', () => {
  it('with id_token_hint: back at the registered URI with state, signed out of Lanyard', async () => {
    await makeUser(f.db, 'alice');
    const app = await makeRp('RP one');
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      const idToken = await signInToRp(page, app);
      const url = await endSessionUrl(app, {
        id_token_hint: idToken,
        post_logout_redirect_uri: `${callbackBase}/bye`,
        state: 'st 1',
      });
      await page.goto(url);
      expect(page.url()).toBe(`${callbackBase}/bye?state=st+1`);
      // Lanyard's session is over: authorizing again asks for a sign-in.
      await page.goto(
        `${base}/oauth/authorize?client_id=${app.clientId}&redirect_uri=${encodeURIComponent(`${callbackBase}/callback`)}&response_type=code&scope=openid`,
      );
      expect(new URL(page.url()).pathname).toBe('/users/sign_in');
    } finally {
      await context.close();
    }
  });

  it('without a hint: "Sign out of Lanyard?" (axe-clean at 390 and 1280 px), then signed out', async () => {
    const app = await makeRp('RP two');
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await signInToRp(page, app);
      await page.goto(
        await endSessionUrl(app, {
          client_id: app.clientId,
          post_logout_redirect_uri: `${callbackBase}/bye`,
          state: 'x',
        }),
      );
      expect(await page.title()).toContain('Sign out of Lanyard?');
      await axeClean(page);
      await Promise.all([
        page.waitForURL((u) => u.href.startsWith(callbackBase)),
        page.locator('form[action="/oauth/logout/confirm"] button').click(),
      ]);
      expect(page.url()).toBe(`${callbackBase}/bye?state=x`);
    } finally {
      await context.close();
    }
  });
});
