// Issue 28's form errors in a real browser (Debian's chromium via playwright-core), at 390 px: a
// refused form shows "There is a problem" with a link per field, focus is on that summary without
// any script (autofocus on a tabindex=-1 box), each field carries its own message (aria-invalid,
// aria-describedby naming it), the summary's links lead to the fields, and axe finds nothing in
// light or dark (inspectPage). Two forms: the password change (text fields) and a new application
// (a textarea and a group of checkboxes). Nothing was changed by either refusal.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chromiumAvailable as available,
  inspectPage,
  launchChromium,
  listenOnLoopback,
  press,
} from '../support/chromium';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

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

/** The summary's heading and link texts, and which element has focus (evaluated in the page). */
const summaryOf = (page: Page) =>
  page.evaluate(`({
    heading: document.querySelector('#error-summary h2')?.textContent,
    links: [...document.querySelectorAll('#error-summary a')].map((a) => [a.getAttribute('href'), a.textContent]),
    focused: document.activeElement?.id,
  })`);

/** What a field tells assistive technology: aria-invalid, and the texts its aria-describedby names. */
const fieldOf = (page: Page, id: string) =>
  page.evaluate(`(() => {
    const el = document.getElementById(${JSON.stringify(id)});
    return {
      invalid: el.getAttribute('aria-invalid'),
      described: (el.getAttribute('aria-describedby') ?? '')
        .split(' ')
        .filter(Boolean)
        .map((d) => document.getElementById(d)?.textContent),
    };
  })()`);

describe.skipIf(!available)('form errors in chromium at 390 px', () => {
  it('password change and a new application: summary focused, messages at their fields, axe-clean', async () => {
    await makeUser(f.db, 'gale');
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}/users/sign_in`);
      await page.fill('#user_login', 'gale');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');
      const hash = async () =>
        (
          await f.db
            .selectFrom('users')
            .select('password_hash')
            .where('username', '=', 'gale')
            .executeTakeFirstOrThrow()
        ).password_hash;
      const before = await hash();

      // The password form, with nothing in the current password and too short a new one. The
      // browser's own `required` check is switched off: the server's answer is what is tested.
      await page.goto(`${base}/-/user_settings/password/edit`);
      await page.$eval('form[action="/-/user_settings/password"]', (form) => form.setAttribute('novalidate', ''));
      await page.fill('#user_new_password', 'short');
      await page.fill('#user_password_confirmation', 'short');
      await press(page, 'Save password');
      expect(await summaryOf(page)).toEqual({
        heading: 'There is a problem',
        links: [
          ['#user_password', 'Enter your current password'],
          ['#user_new_password', 'Password must be 8 characters or more'],
        ],
        focused: 'error-summary',
      });
      expect(await fieldOf(page, 'user_password')).toEqual({
        invalid: 'true',
        described: ['Error: Enter your current password'],
      });
      expect(await fieldOf(page, 'user_new_password')).toEqual({
        invalid: 'true',
        described: ['At least 8 characters.', 'Error: Password must be 8 characters or more'],
      });
      expect(await fieldOf(page, 'user_password_confirmation')).toEqual({ invalid: null, described: [] });
      await inspectPage(page, 'form-errors-password');
      // The summary's link leads to its field.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.click('#error-summary a[href="#user_new_password"]');
      expect(new URL(page.url()).hash).toBe('#user_new_password');
      expect(await hash()).toBe(before);

      // A new application with a fragment in its redirect URI and no scope.
      await page.goto(`${base}/profile/applications/new`);
      await page.$eval('form[action="/profile/applications"]', (form) => form.setAttribute('novalidate', ''));
      await page.fill('#app_name', 'Deploy bot');
      await page.fill('#app_redirect_uri', 'https://deploy.example/cb#top');
      await press(page, 'Save application');
      expect(new URL(page.url()).pathname).toBe('/profile/applications/new');
      expect(await summaryOf(page)).toEqual({
        heading: 'There is a problem',
        links: [['#app_redirect_uri', 'Redirect URIs must not contain a # fragment']],
        focused: 'error-summary',
      });
      expect(await fieldOf(page, 'app_redirect_uri')).toEqual({
        invalid: 'true',
        described: [
          'One per line. Loopback URIs (127.0.0.1, [::1]) match any port.',
          'Error: Redirect URIs must not contain a # fragment',
        ],
      });
      expect(await page.inputValue('#app_name')).toBe('Deploy bot');
      await inspectPage(page, 'form-errors-application');
      await page.setViewportSize({ width: 390, height: 844 });
      await page.fill('#app_redirect_uri', 'https://deploy.example/cb');
      await press(page, 'Save application');
      expect(await summaryOf(page)).toEqual({
        heading: 'There is a problem',
        links: [['#app_scopes', 'Select at least one scope from the list']],
        focused: 'error-summary',
      });
      // A group of checkboxes says it by its fieldset's description (aria-invalid is not for groups).
      expect(await fieldOf(page, 'app_scopes')).toEqual({
        invalid: null,
        described: ['What the application may ask people for.', 'Error: Select at least one scope from the list'],
      });
      await inspectPage(page, 'form-errors-application-scopes');
      expect(await f.db.selectFrom('oauth_applications').select('id').execute()).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);
});
