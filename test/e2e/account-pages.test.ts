// The account pages in a real browser (Debian's chromium via playwright-core) against the real
// server: enrol in 2FA from the shown secret, sign in with a recovery code, create a personal
// access token and use it, authorize an application, revoke it (tokens die, consent returns),
// change notification levels and the password. Every page: axe-core with 0 violations in light
// and dark, no sideways scrolling at 390 px, screenshots at 390 and 1280 px in test-artifacts/.
import type http from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chromiumAvailable as available,
  inspectPage,
  launchChromium,
  press,
  listenOnLoopback,
  startLandingServer,
} from '../support/chromium';
import { totp } from '../support/totp';
import { addMember, createGroup, createProject } from '../support/api-fixtures';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let browser: Browser;
let base: string;
let target: http.Server;
let callbackBase: string;
const checkedPages: string[] = [];

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

/** The page checked (see inspectPage), counted. */
async function inspect(page: Page, name: string) {
  await inspectPage(page, name);
  checkedPages.push(name);
}

describe.skipIf(!available)('account pages in chromium', () => {
  it('walks every page: 2FA enrolment and recovery code, a PAT on /api/v4/user, authorized apps, notifications, password', async () => {
    const { user } = await makeUser(f.db, 'dana');
    await createGroup(f.db, { path: 'platform', name: 'Platform', visibility: 'private' });
    await createGroup(f.db, { path: 'infra', name: 'Infrastructure', parent: 'platform', visibility: 'private' });
    await createProject(f.db, {
      path: 'platform/infra/terraform-modules',
      name: 'Terraform modules',
      visibility: 'private',
    });
    await addMember(f.db, { group: 'platform', username: 'dana', access: 'maintainer' });
    const client = await makeApp(f.db, {
      name: 'Grafana',
      redirectUris: [`${callbackBase}/cb`],
      scopes: 'read_user api',
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      // Sign in (the page itself is checked too).
      await page.goto(`${base}/users/sign_in`);
      await inspect(page, 'sign-in');
      await page.fill('#user_login', 'dana');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');
      expect(new URL(page.url()).pathname).toBe('/-/profile');
      await inspect(page, 'account-overview');
      await page.goto(`${base}/profile/applications`);
      await inspect(page, 'applications-empty');

      // Two-factor enrolment with a code computed from the secret shown in text.
      await page.goto(`${base}/-/profile/two_factor_auth`);
      await inspect(page, 'two-factor-enrol');
      const secret = ((await page.textContent('#otp-secret')) ?? '').replace(/\s/g, '');
      expect(secret).toMatch(/^[A-Z2-7]{32}$/);
      await page.fill('#pin_code', '000000' === totp(secret) ? '111111' : '000000');
      await press(page, 'Register with two-factor app');
      expect(await page.textContent('#pin_code-error')).toContain('The code is not correct.');
      await inspect(page, 'two-factor-wrong-pin');
      await page.fill('#pin_code', totp(secret));
      await press(page, 'Register with two-factor app');
      const codes = await page.locator('#recovery-codes code').allTextContents();
      expect(codes).toHaveLength(10);
      await inspect(page, 'two-factor-recovery-codes');
      // Shown until saved (a reload keeps them); "I have saved them" ends it.
      await page.reload();
      expect(await page.locator('#recovery-codes').count()).toBe(1);
      await press(page, 'I have saved my recovery codes');
      expect(await page.locator('#recovery-codes').count()).toBe(0);
      expect(await page.textContent('#two-factor-status')).toContain('10 of 10 recovery codes remain unused.');
      await inspect(page, 'two-factor-enabled');

      // Sign out, then in again with a recovery code at the TOTP step.
      await press(page, 'Sign out');
      expect(new URL(page.url()).pathname).toBe('/users/sign_in');
      await page.fill('#user_login', 'dana');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');
      await inspect(page, 'two-factor-step');
      await page.fill('#user_otp_attempt', codes[0]);
      await press(page, 'Verify code');
      expect(new URL(page.url()).pathname).toBe('/-/profile');

      // A personal access token, shown once, used on /api/v4/user; a reload changes nothing.
      await page.goto(`${base}/-/user_settings/personal_access_tokens`);
      await inspect(page, 'personal-access-tokens-empty');
      await page.fill('#token_name', 'laptop git');
      await page.check('#token_scopes-read_user');
      await press(page, 'Create personal access token');
      const pat = (await page.textContent('#created-personal-access-token')) ?? '';
      expect(pat).toMatch(/^glpat-/);
      await inspect(page, 'personal-access-token-created');
      await page.reload();
      expect(await page.locator('#created-personal-access-token').count()).toBe(0);
      expect(await f.db.selectFrom('personal_access_tokens').select('id').execute()).toHaveLength(1);
      const me = await fetch(`${base}/api/v4/user`, { headers: { 'private-token': pat } });
      expect(me.status).toBe(200);
      expect(((await me.json()) as { username: string; two_factor_enabled: boolean }).username).toBe('dana');
      await page.getByRole('link', { name: 'Revoke' }).click();
      await page.waitForURL((u) => u.pathname.endsWith('/revoke'));
      await inspect(page, 'personal-access-token-revoke-confirm');
      await page.goBack();

      // Authorize the confidential application: consent once, skipped the second time.
      const authorize = (state: string) =>
        `${base}/oauth/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: `${callbackBase}/cb`, response_type: 'code', state })}`;
      await page.goto(authorize('one'));
      expect(await page.textContent('main')).toContain('Grafana is requesting access to your account');
      await inspect(page, 'consent');
      await Promise.all([
        page.waitForURL((u) => u.href.startsWith(callbackBase)),
        page.getByRole('button', { name: 'Authorize' }).click(),
      ]);
      const code = new URL(page.url()).searchParams.get('code')!;
      const tokenRes = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: `${callbackBase}/cb`,
          client_id: client.clientId,
          client_secret: client.secret,
        }),
      });
      const { access_token } = (await tokenRes.json()) as { access_token: string };
      await page.goto(authorize('two'));
      expect(page.url().startsWith(`${callbackBase}/cb?code=`)).toBe(true);

      // Revoke it on the authorized-applications page: its token dies, consent is asked again.
      await page.goto(`${base}/-/user_settings/authorized_applications`);
      expect(await page.textContent('#authorized')).toContain('Grafana');
      await inspect(page, 'applications-authorized');
      await page.locator('#authorized').getByRole('link', { name: 'Revoke' }).click();
      await page.waitForURL((u) => u.pathname.endsWith('/revoke'));
      await inspect(page, 'authorized-application-revoke-confirm');
      await press(page, 'Revoke');
      expect(await page.textContent('#flash-notice')).toBe('The access of Grafana was revoked.');
      await page.reload();
      expect(await page.locator('#flash-notice').count()).toBe(0);
      const dead = await fetch(`${base}/api/v4/user`, { headers: { authorization: `Bearer ${access_token}` } });
      expect(dead.status).toBe(401);
      await page.goto(authorize('three'));
      expect(await page.textContent('main')).toContain('Grafana is requesting access to your account');

      // Register an application of one's own ("New application", its own page); the secret is shown once.
      await page.goto(`${base}/-/user_settings/applications`);
      await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'New application' }).click()]);
      await page.fill('#app_name', 'Deploy bot');
      await page.fill('#app_redirect_uri', 'https://deploy.example/oauth/callback');
      await page.check('#app_scopes-api');
      await press(page, 'Save application');
      expect(await page.textContent('#application-secret')).toMatch(/^gloas-/);
      await inspect(page, 'applications-created');
      await page.reload();
      expect(await page.locator('#application-secret').count()).toBe(0);
      expect(await f.db.selectFrom('oauth_applications').select('id').execute()).toHaveLength(2);

      // Notifications: the subgroup and project show the parent's Disabled, and where it comes from.
      await page.goto(`${base}/-/profile/notifications`);
      await page.selectOption('#level-group-1', 'disabled');
      await Promise.all([
        page.waitForNavigation(),
        page.locator('tr[data-path="platform"]').getByRole('button', { name: 'Save' }).click(),
      ]);
      expect(await page.textContent('tr[data-path="platform/infra/terraform-modules"] .effective')).toBe(
        'Disabled from group platform',
      );
      await inspect(page, 'notifications');

      // Password: a wrong current password is an error on the page; then the change.
      await page.goto(`${base}/-/user_settings/password/edit`);
      await inspect(page, 'password');
      await page.fill('#user_password', 'not my password');
      await page.fill('#user_new_password', 'a much longer passphrase');
      await page.fill('#user_password_confirmation', 'a much longer passphrase');
      await press(page, 'Save password');
      expect(await page.textContent('#error-summary')).toContain(
        'The current password is not correct. Enter your current password',
      );
      await inspect(page, 'password-error');
      await page.fill('#user_password', PASSWORD);
      await page.fill('#user_new_password', 'a much longer passphrase');
      await page.fill('#user_password_confirmation', 'a much longer passphrase');
      await press(page, 'Save password');
      expect(await page.textContent('#flash-notice')).toContain('Password was successfully updated.');
      await page.reload();
      expect(await page.locator('#flash-notice').count()).toBe(0);

      // The error page of a bad authorization request.
      await page.goto(`${base}/oauth/authorize?client_id=nope&redirect_uri=x&response_type=code`);
      await inspect(page, 'error');
      expect(user.username).toBe('dana');
      expect(checkedPages).toHaveLength(19);
    } finally {
      await context.close();
    }
  }, 240_000);
});
