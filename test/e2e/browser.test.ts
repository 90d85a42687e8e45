// A real headless browser (Debian's chromium, driven by playwright-core) against the real server
// on real PostgreSQL: sign in with and without 2FA, approve and deny consent, land on the
// client's redirect URI (a tiny server on 127.0.0.1) with the right query.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { totp } from '../support/totp';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = fs.existsSync(CHROMIUM);
if (!available) {
  // Only when the browser is truly not installed (CI installs it: apt-get install chromium).
  console.warn(
    `[e2e] SKIPPED: no chromium at ${CHROMIUM} (install it with: apt-get install -y chromium, or set CHROMIUM_PATH)`,
  );
}

const f = useFixture();
let browser: Browser;
let base: string;
let target: http.Server;
let callbackBase: string;
const received: string[] = [];

beforeAll(async () => {
  if (!available) return;
  await f.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(f.app.server.address() as AddressInfo).port}`;
  f.config.publicUrl = base;
  // The client's redirect target: records what arrives.
  target = http.createServer((req, res) => {
    received.push(req.url!);
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!DOCTYPE html><title>callback</title><p id="done">callback received</p>');
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  callbackBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    timeout: 30_000,
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (target ? target.close(r) : r(undefined)));
});

function authorizeUrl(clientId: string, state: string) {
  return `${base}/oauth/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: `${callbackBase}/callback`, response_type: 'code', state, scope: 'read_user' })}`;
}

describe.skipIf(!available)('headless chromium', () => {
  it('signs in without 2FA, approves consent, lands on the redirect URI with code and state; the code works', async () => {
    await makeUser(f.db, 'alice');
    const app = await makeApp(f.db, { name: 'Browser <Test> App', redirectUris: [`${callbackBase}/callback`] });
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(authorizeUrl(app.clientId, 'st-1 & more'));
      expect(new URL(page.url()).pathname).toBe('/users/sign_in');
      await page.fill('input[name="user[login]"]', 'alice');
      await page.fill('input[name="user[password]"]', PASSWORD);
      await page.click('button[type="submit"]');
      await page.waitForURL((u) => u.pathname === '/oauth/authorize');
      expect(await page.textContent('body')).toContain('Browser <Test> App is requesting access to your account');
      expect(await page.textContent('#scopes')).toContain('Read your profile');
      const cookies = await context.cookies();
      expect(cookies.find((c) => c.name === '_lanyard_session')).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

      await page.getByRole('button', { name: 'Authorize' }).click();
      await page.waitForURL((u) => u.href.startsWith(callbackBase));
      const landed = new URL(page.url());
      expect(landed.pathname).toBe('/callback');
      expect([...landed.searchParams.keys()]).toEqual(['code', 'state', 'iss']);
      expect(landed.searchParams.get('iss')).toBe(base);
      expect(landed.searchParams.get('state')).toBe('st-1 & more');
      expect(landed.searchParams.get('code')).toMatch(/^[0-9a-f]{64}$/);
      expect(await page.textContent('#done')).toBe('callback received');

      const res = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: landed.searchParams.get('code')!,
          redirect_uri: `${callbackBase}/callback`,
          client_id: app.clientId,
          client_secret: app.secret,
        }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { scope: string }).scope).toBe('read_user');
    } finally {
      await context.close();
    }
  });

  it('signs in with 2FA (TOTP step), denies consent, lands with error=access_denied and state', async () => {
    const { otpSecret } = await makeUser(f.db, 'carol', { twoFactor: true });
    const app = await makeApp(f.db, { name: 'Second App', redirectUris: [`${callbackBase}/callback`] });
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(authorizeUrl(app.clientId, 'deny-me'));
      await page.fill('input[name="user[login]"]', 'carol@example.com');
      await page.fill('input[name="user[password]"]', PASSWORD);
      await page.click('button[type="submit"]');
      await page.waitForSelector('input[name="user[otp_attempt]"]');
      expect(await page.textContent('h1')).toBe('Two-factor authentication');
      await page.fill('input[name="user[otp_attempt]"]', totp(otpSecret!));
      await page.click('button[type="submit"]');
      await page.waitForURL((u) => u.pathname === '/oauth/authorize');
      expect(await page.textContent('body')).toContain('Second App is requesting access to your account');

      await page.getByRole('button', { name: 'Deny' }).click();
      await page.waitForURL((u) => u.href.startsWith(callbackBase));
      const landed = new URL(page.url());
      expect(Object.fromEntries(landed.searchParams)).toEqual({
        error: 'access_denied',
        error_description: 'The resource owner or authorization server denied the request.',
        state: 'deny-me',
        iss: base,
      });
    } finally {
      await context.close();
    }
  });

  it('a wrong password shows the generic error and stays on the sign-in page; the consent page cannot be framed', async () => {
    await makeUser(f.db, 'dave');
    const app = await makeApp(f.db, { name: 'Framed', redirectUris: [`${callbackBase}/callback`] });
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${base}/users/sign_in`);
      await page.fill('input[name="user[login]"]', 'dave');
      await page.fill('input[name="user[password]"]', 'not the password');
      await page.click('button[type="submit"]');
      expect(await page.textContent('[role="alert"]')).toBe('Invalid login or password.');
      await page.fill('input[name="user[password]"]', PASSWORD);
      await page.click('button[type="submit"]');
      await page.waitForURL((u) => u.pathname === '/-/profile');

      // A page on another origin (the redirect target) frames the consent page and, as a
      // positive control, a page that allows framing: only the latter renders.
      const framing = await context.newPage();
      await framing.goto(`${callbackBase}/framer`);
      await framing.setContent(
        `<iframe id="control" src="${callbackBase}/framed"></iframe><iframe id="consent" src="${authorizeUrl(app.clientId, 'x')}"></iframe>`,
      );
      await framing.waitForTimeout(700);
      const texts = await Promise.all(
        framing
          .frames()
          .filter((fr) => fr !== framing.mainFrame())
          .map((fr) => fr.evaluate<string>('document.body ? document.body.innerText : ""').catch(() => '')),
      );
      expect(texts.some((t) => t.includes('callback received'))).toBe(true);
      expect(texts.some((t) => t.includes('is requesting access'))).toBe(false);
      // Chromium's error page for a frame refused by X-Frame-Options / CSP frame-ancestors.
      expect(texts.filter((t) => /refused to connect|blocked/i.test(t))).toHaveLength(1);
      // Not signed out or broken: the same page opened top-level renders.
      await page.goto(authorizeUrl(app.clientId, 'x'));
      expect(await page.textContent('body')).toContain('Framed is requesting access to your account');
    } finally {
      await context.close();
    }
  });
});
