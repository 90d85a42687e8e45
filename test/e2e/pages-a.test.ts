// Issue 28's pages in a real browser (Debian's chromium via playwright-core): every error page, the
// sign-in page with its help, the account overview, two-factor enrolment and the recovery-code step,
// and the enrolment an administrator requires. Each page: axe-core with 0 violations in light and
// dark, no sideways scroll at 390, 768, 1024 and 1280 px, screenshots in test-artifacts/. The copy
// button copies and says so; the pages work with JavaScript off; Back after a POST never resubmits.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireTwoFactorEnrolment } from '../../service/domain/users';
import {
  chromiumAvailable as available,
  inspectPage,
  launchChromium,
  listenOnLoopback,
  press,
} from '../support/chromium';
import { totp } from '../support/totp';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let browser: Browser;
let base: string;

beforeAll(async () => {
  if (!available) return;
  base = await listenOnLoopback(f);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

/** inspectPage (axe light and dark, 390 and 1280 px screenshots) plus no sideways scroll at 768 and 1024. */
async function inspect(page: Page, name: string) {
  for (const width of [768, 1024]) {
    await page.setViewportSize({ width, height: 900 });
    const { scrollWidth, innerWidth } = (await page.evaluate(
      '({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })',
    )) as { scrollWidth: number; innerWidth: number };
    expect(scrollWidth, `${name}: scrolls sideways at ${width} px`).toBeLessThanOrEqual(innerWidth);
  }
  await inspectPage(page, name);
}

const secretOn = async (page: Page) => ((await page.textContent('#otp-secret')) ?? '').replace(/\s/g, '');

describe.skipIf(!available)('issue 28 pages in chromium', () => {
  it('error pages: 404, 405, 400, 422 and the authorization error, each with a way back', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const notFound = await page.goto(`${base}/no/such/page`);
      expect(notFound?.status()).toBe(404);
      await inspect(page, 'error-404');
      const icon = await page.request.get(`${base}/favicon.ico`);
      expect([icon.status(), icon.headers()['content-type']]).toEqual([200, 'image/svg+xml']);

      const nul = await page.goto(`${base}/oauth/authorize?client_id=x%00&redirect_uri=y&response_type=code`);
      expect(nul?.status()).toBe(400);
      await inspect(page, 'error-400');

      const unknown = await page.goto(`${base}/oauth/authorize?client_id=${'f'.repeat(64)}&redirect_uri=x`);
      expect(unknown?.status()).toBe(400);
      expect(await page.textContent('h1')).toBe('Unknown application');
      await inspect(page, 'error-authorize');

      // A form whose token went stale: 422, and the way back leads to the form.
      await page.goto(`${base}/users/sign_in`);
      await page.evaluate(`document.querySelector('input[name="authenticity_token"]').value = '${'x'.repeat(43)}'`);
      await page.fill('#user_login', 'nobody');
      await page.fill('#user_password', 'whatever');
      await press(page, 'Sign in');
      expect(await page.textContent('h1')).toBe('The change you requested was rejected');
      await inspect(page, 'error-422');
      await page.click('#error-back');
      expect(new URL(page.url()).pathname).toBe('/users/sign_in');

      const wrongMethod = await page.request.fetch(`${base}/users/sign_in`, { method: 'DELETE' });
      expect(wrongMethod.status()).toBe(405);
      await page.setContent(await wrongMethod.text());
      expect(await page.textContent('h1')).toBe('Method not allowed');
    } finally {
      await context.close();
    }
  });

  it('sign-in: continue to <app>, show password, overview; 2FA enrolment copy buttons; recovery codes step; Back never resubmits', async () => {
    await makeUser(f.db, 'dana');
    const c = await makeApp(f.db, { name: 'Grafana', redirectUris: ['https://grafana.example/login/generic_oauth'] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const page = await context.newPage();
    const posts: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST') posts.push(new URL(r.url()).pathname);
    });
    try {
      await page.goto(
        `${base}/oauth/authorize?client_id=${c.clientId}&redirect_uri=${encodeURIComponent('https://grafana.example/login/generic_oauth')}&response_type=code&scope=api`,
      );
      expect(new URL(page.url()).pathname).toBe('/users/sign_in');
      expect(await page.textContent('#continue-to')).toBe('Grafana');
      expect(await page.evaluate('document.activeElement.id')).toBe('user_login');
      await inspect(page, 'sign-in-continue');
      await page.fill('#user_password', 'secret words');
      await page.getByRole('button', { name: 'Show password' }).click();
      expect(await page.getAttribute('#user_password', 'type')).toBe('text');
      await page.getByRole('button', { name: 'Show password' }).click();
      expect(await page.getAttribute('#user_password', 'type')).toBe('password');

      // Sign in without the authorize detour: the overview.
      await context.clearCookies();
      await page.goto(`${base}/users/sign_in`);
      await page.fill('#user_login', 'dana');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');
      expect(new URL(page.url()).pathname).toBe('/-/profile');
      await inspect(page, 'overview');

      await page.goto(`${base}/-/profile/two_factor_auth`);
      await inspect(page, 'two-factor-enrol');
      const secret = await secretOn(page);
      await page.getByRole('button', { name: 'Copy key' }).click();
      await expect.poll(() => page.textContent('#live-status')).toBe('Copied');
      expect(((await page.evaluate('navigator.clipboard.readText()')) as string).replace(/\s/g, '')).toBe(secret);
      await page.fill('#pin_code', totp(secret));
      await press(page, 'Register with two-factor app');
      expect(new URL(page.url()).pathname).toBe('/-/profile/two_factor_auth');
      await inspect(page, 'recovery-codes');
      const codes = await page.locator('#recovery-codes-list code').allTextContents();
      expect(codes).toHaveLength(10);
      await page.getByRole('button', { name: 'Copy codes' }).click();
      await expect.poll(() => page.evaluate('navigator.clipboard.readText()')).toBe(codes.join('\n'));
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('link', { name: 'Download codes (.txt)' }).click(),
      ]);
      expect(download.suggestedFilename()).toBe('lanyard-recovery-codes.txt');

      // Back after the enrolment POST: the GET before it, no POST repeated.
      const before = posts.length;
      await page.goBack();
      await page.goForward();
      expect(posts.length).toBe(before);

      await press(page, 'I have saved my recovery codes');
      expect(await page.locator('#recovery-codes').count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('with JavaScript off: the copy, print and show-password buttons stay hidden; sign-in and the code step work', async () => {
    await makeUser(f.db, 'erin');
    await requireTwoFactorEnrolment(f.db, 'erin', 'admin:test');
    // Playwright's javaScriptEnabled: false is CDP Emulation.setScriptExecutionDisabled.
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, javaScriptEnabled: false });
    const page = await context.newPage();
    try {
      await page.goto(`${base}/users/sign_in`);
      expect(await page.isVisible('[data-show-password]')).toBe(false);
      await page.fill('#user_login', 'erin');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');
      expect(new URL(page.url()).pathname).toBe('/users/two_factor_enrolment');
      // (No axe here: page.evaluate needs JavaScript. The panel is the one checked as two-factor-enrol.)
      expect(await page.isVisible('[data-copy]')).toBe(false);
      const secret = await secretOn(page);
      await page.fill('#pin_code', totp(secret));
      await press(page, 'Register with two-factor app');
      expect(new URL(page.url()).pathname).toBe('/-/profile/two_factor_auth');
      expect(await page.isVisible('[data-print]')).toBe(false);
      expect(await page.locator('#recovery-codes-list code').count()).toBe(10);
      await press(page, 'I have saved my recovery codes');
      await page.goto(`${base}/-/profile`);
      expect(await page.textContent('#overview-two-factor')).toContain('10 of 10 recovery codes remain unused.');
    } finally {
      await context.close();
    }
  });
});
