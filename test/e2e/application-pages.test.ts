// The consent, device, applications and access-token pages in Chromium (Debian's chromium via
// playwright-core) against the real server: no sideways scrolling at 390, 768, 1024 and 1280 px,
// axe-core with 0 violations in light and dark, screenshots at 390 and 1280 px in test-artifacts/;
// Back after every successful POST is a GET (post/redirect/get) and changes nothing; Edit keeps the
// App ID; bad input is shown at its field.
import type http from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chromiumAvailable as available,
  inspectPage,
  launchChromium,
  listenOnLoopback,
  press,
  startLandingServer,
} from '../support/chromium';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let browser: Browser;
let base: string;
let target: http.Server;
let callbackBase: string;

beforeAll(async () => {
  if (!available) return;
  base = await listenOnLoopback(f);
  ({ server: target, url: callbackBase } = await startLandingServer('cb'));
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (target ? target.close(r) : r(undefined)));
});

/** No sideways scrolling at any of the four widths, then axe and screenshots (inspectPage). */
async function check(page: Page, name: string) {
  for (const width of [390, 768, 1024, 1280]) {
    await page.setViewportSize({ width, height: 900 });
    const { scrollWidth, innerWidth } = (await page.evaluate(
      '({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })',
    )) as { scrollWidth: number; innerWidth: number };
    expect(scrollWidth, `${name}: scrolls sideways at ${width} px`).toBeLessThanOrEqual(innerWidth);
  }
  await inspectPage(page, name);
}

/** The browser's Back: a GET of the page before (never a re-posted form). */
async function backIsGet(page: Page, path: string) {
  const response = await page.goBack();
  expect(response?.request().method()).toBe('GET');
  expect(new URL(page.url()).pathname).toBe(path);
}

const appRows = () =>
  f.db
    .selectFrom('oauth_applications')
    .select(['id', 'uid', 'name', 'secret_digest', 'redirect_uris'])
    .orderBy('id')
    .execute();

describe.skipIf(!available)('consent, device, applications and token pages in chromium', () => {
  it('every page fits 390–1280 px, is axe-clean light and dark, and Back after a POST never re-posts', async () => {
    const { user } = await makeUser(f.db, 'dana');
    await f.db.updateTable('users').set({ name: 'Dana Scully' }).where('id', '=', user.id).execute();
    const long = `${callbackBase}/oauth2/callback/with/a/rather/long/path/that/goes/on?tenant=0123456789abcdef0123456789abcdef`;
    const owned = await makeApp(f.db, {
      name: 'Grafana at the observability team',
      redirectUris: [`${callbackBase}/cb`, long],
      scopes: 'api read_api read_user openid profile email',
      ownerId: user.id,
    });
    for (let i = 1; i <= 20; i++) await makeApp(f.db, { name: `Tool ${i}`, scopes: 'read_user', ownerId: user.id });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}/users/sign_in`);
      await page.fill('#user_login', 'dana');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');

      // The consent page: who registered it, the host it returns to, the scopes in words.
      const authorize = `${base}/oauth/authorize?${new URLSearchParams({
        client_id: owned.clientId,
        redirect_uri: long,
        response_type: 'code',
        scope: 'openid profile email read_api',
        state: 's',
      })}`;
      await page.goto(authorize);
      expect(await page.textContent('#application-owner')).toBe('Registered by Dana Scully (@dana)');
      expect(await page.textContent('#redirect-host')).toBe(`You will be sent back to ${new URL(callbackBase).host}.`);
      expect(await page.locator('#scopes li').allTextContents()).toEqual([
        'Confirm who you are (your Lanyard account)',
        'See your name, username, avatar and the groups you belong to',
        'See your primary e-mail address and whether it is confirmed',
        'Read everything your account can reach, including all your groups and projects',
      ]);
      const authorizeBox = (await page.getByRole('button', { name: 'Authorize' }).boundingBox())!;
      const denyBox = (await page.getByRole('button', { name: 'Deny' }).boundingBox())!;
      expect(denyBox.x - (authorizeBox.x + authorizeBox.width)).toBeGreaterThanOrEqual(8);
      await check(page, 'consent-owned');

      // The device flow's code step and its consent step.
      const device = (await (
        await fetch(`${base}/oauth/authorize_device`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            client_id: (await makeApp(f.db, { name: 'glab', confidential: false, scopes: 'api' })).clientId,
          }),
        })
      ).json()) as { user_code: string };
      await page.goto(`${base}/oauth/device`);
      await check(page, 'device-code');
      await page.fill('#user_code', device.user_code);
      await press(page, 'Continue');
      expect(new URL(page.url()).pathname).toBe('/oauth/device/confirm');
      expect(await page.textContent('#application-owner')).toBe('Registered by the administrator');
      await check(page, 'device-consent');

      // Applications: the list (21: two pages), New application, bad input at its field.
      await page.goto(`${base}/profile/applications`);
      expect(await page.textContent('#your-applications')).toBe('Your applications (21)');
      await check(page, 'applications-list');
      await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'New application' }).click()]);
      await check(page, 'application-new');
      await page.fill('#app_name', 'Deploy bot');
      await page.fill('#app_redirect_uri', 'https://deploy.example/cb#fragment');
      await page.check('#app_scopes-api');
      await press(page, 'Save application');
      expect(await page.textContent('#app_redirect_uri-error')).toContain(
        'Redirect URIs must not contain a # fragment',
      );
      await check(page, 'application-new-error');
      await page.fill('#app_redirect_uri', `https://deploy.example/cb\n${long}`);
      const before = await appRows();
      await press(page, 'Save application');
      expect(await page.textContent('#application-secret')).toMatch(/^gloas-[0-9a-f]{64}$/);
      const created = (await appRows()).at(-1)!;
      expect(new URL(page.url()).pathname).toBe(`/profile/applications/${created.id}`);
      expect(await page.textContent('#application-id')).toBe(created.uid);
      expect(await page.locator('#redirect-uris li').allTextContents()).toEqual(['https://deploy.example/cb', long]);
      await check(page, 'application-created');
      // Back: the form again by GET, nothing registered twice.
      await backIsGet(page, '/profile/applications/new');
      expect(await appRows()).toHaveLength(before.length + 1);
      await page.goForward();
      await page.reload();
      expect(await page.locator('#application-secret').count()).toBe(0);

      // Edit keeps the App ID (and the secret).
      await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'Edit' }).click()]);
      await check(page, 'application-edit');
      await page.fill('#app_name', 'Deploy bot (production)');
      await page.fill('#app_redirect_uri', 'https://deploy.example/callback');
      await press(page, 'Save changes');
      expect(await page.textContent('#flash-notice')).toBe('The application was updated.');
      expect(await page.textContent('#application-id')).toBe(created.uid);
      expect((await appRows()).at(-1)).toEqual({
        ...created,
        name: 'Deploy bot (production)',
        redirect_uris: ['https://deploy.example/callback'],
      });
      await backIsGet(page, `/profile/applications/${created.id}/edit`);
      await page.goForward();

      // Renew secret: a confirm page, then the new secret once; Back is a GET.
      await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'Renew secret' }).click()]);
      await check(page, 'application-renew-confirm');
      await press(page, 'Renew secret');
      expect(await page.textContent('#application-secret')).toMatch(/^gloas-/);
      await backIsGet(page, `/profile/applications/${created.id}/renew_secret`);

      // Authorized applications: their own page in the settings navigation.
      await page.goto(authorize);
      await Promise.all([
        page.waitForURL((u) => u.href.startsWith(callbackBase)),
        page.getByRole('button', { name: 'Authorize' }).click(),
      ]);
      const exchanged = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: new URL(page.url()).searchParams.get('code')!,
          redirect_uri: long,
          client_id: owned.clientId,
          client_secret: owned.secret,
        }),
      });
      expect(exchanged.status).toBe(200);
      await page.goto(`${base}/profile/applications`);
      await Promise.all([
        page.waitForNavigation(),
        page.getByRole('link', { name: 'Authorized applications' }).first().click(),
      ]);
      expect(new URL(page.url()).pathname).toBe('/-/user_settings/authorized_applications');
      expect(await page.textContent('#authorized')).toContain('Grafana at the observability team');
      await check(page, 'authorized-applications');

      // Access tokens: only the scopes a token can hold; bad input at its field; shown once; expiry in words.
      const PATS = '/-/user_settings/personal_access_tokens';
      await page.goto(`${base}${PATS}`);
      expect(
        await page.locator('#token_scopes input').evaluateAll((els) => els.map((e) => e.getAttribute('value'))),
      ).toEqual(['api', 'read_api', 'read_user']);
      await page.fill('#token_name', 'laptop');
      await press(page, 'Create personal access token');
      expect(await page.textContent('#token_scopes-error')).toBe('Error: Select at least one scope');
      await check(page, 'personal-access-token-error');
      const soon = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
      await page.fill('#token_expires_at', soon);
      await page.check('#token_scopes-read_user');
      await press(page, 'Create personal access token');
      expect(await page.textContent('#created-personal-access-token')).toMatch(/^glpat-/);
      expect(await page.textContent('#tokens td[data-label="Expires"]')).toBe(`in 3 days (${soon})Expires soon`);
      await check(page, 'personal-access-token-created');
      await backIsGet(page, PATS);
      expect(await f.db.selectFrom('personal_access_tokens').select('id').execute()).toHaveLength(1);
    } finally {
      await context.close();
    }
  }, 300_000);
});
