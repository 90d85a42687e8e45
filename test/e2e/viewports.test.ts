// Every page Lanyard renders, walked once (one browser page signed in, one signed out), at 390, 768, 1024 and 1280 px, light
// and dark: no sideways scroll at any width, axe-core with 0 violations (at 768 px, where the side
// navigation sits beside the content on the narrowest screen), screenshots at 768 and 1024 px in
// test-artifacts/ (the other tests take 390 and 1280). The account's lists are long enough to page
// (25 rows), and the texts long enough to wrap: a long application name, long redirect URIs, long
// group paths.
import type http from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeviceGrant } from '../../service/domain/device-grants';
import { unsubscribeHeaders } from '../../service/domain/notifications/unsubscribe';
import { issueAccessToken } from '../../service/domain/oauth-tokens';
import { randomHex, sha256Hex } from '../../service/domain/secrets';
import { addMember, createGroup, createProject, makePat } from '../support/api-fixtures';
import {
  chromiumAvailable as available,
  inspectWidths,
  launchChromium,
  listenOnLoopback,
  press,
  startLandingServer,
} from '../support/chromium';
import { testKeyRing } from '../support/app';
import { WebClient } from '../oauth/support/browser-like';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let browser: Browser;
let base: string;
let landing: http.Server;
let callbackBase: string;
const walked: string[] = [];

beforeAll(async () => {
  if (!available) return;
  base = await listenOnLoopback(f);
  ({ server: landing, url: callbackBase } = await startLandingServer('cb'));
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (landing ? landing.close(r) : r(undefined)));
});

const two = (n: number) => String(n).padStart(2, '0');

async function check(page: Page, name: string, expected?: { status?: number; h1?: string }) {
  if (expected?.h1 !== undefined) expect(await page.textContent('h1'), name).toBe(expected.h1);
  await inspectWidths(page, `viewports-${name}`, { screenshots: [768, 1024] });
  walked.push(name);
}

/** GET a path and check the page; the status is asserted. */
async function visit(page: Page, path: string, name: string, status = 200) {
  const res = await page.goto(`${base}${path}`);
  expect({ name, status: res?.status() }).toEqual({ name, status });
  await check(page, name);
}

describe.skipIf(!available)('every page at 390, 768, 1024 and 1280 px', () => {
  it('signed out, the 2FA step, every account page, consent, device, every error page', async () => {
    const { user, otp } = await makeUser(f.db, 'tess', { twoFactor: true });
    await f.db
      .insertInto('user_emails')
      .values(
        Array.from({ length: 24 }, (_, i) => ({
          user_id: user.id,
          email: `tess.with.a.rather.long.address.${two(i + 1)}@subdomain.example.com`,
          confirmed_at: i % 3 === 0 ? null : new Date(),
          confirmation_sent_at: new Date(),
        })),
      )
      .execute();
    const now = Date.now();
    await f.db
      .insertInto('web_sessions')
      .values(
        Array.from({ length: 24 }, (_, i) => ({
          id_digest: sha256Hex(randomHex()),
          user_id: user.id,
          data: JSON.stringify({ user_id: user.id, sid: `${two(i + 1)}${'0'.repeat(30)}` }),
          expires_at: new Date(now + 86_400_000),
          user_agent:
            'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
          ip_address: `2001:db8:85a3::8a2e:370:${7334 + i}`,
          last_seen_at: new Date(now - (i + 1) * 60_000),
        })),
      )
      .execute();
    for (let i = 1; i <= 25; i++) {
      const app = await makeApp(f.db, { name: `Authorized application number ${two(i)}` });
      await issueAccessToken(f.db, {
        applicationId: app.application.id,
        userId: user.id,
        scopes: ['api', 'read_user', 'read_repository'],
        withRefreshToken: true,
      });
    }
    await createGroup(f.db, { path: 'platform-engineering', visibility: 'private' });
    await addMember(f.db, { group: 'platform-engineering', username: 'tess', access: 'developer' });
    for (let i = 1; i <= 24; i++) {
      await createGroup(f.db, {
        path: `team-${two(i)}`,
        parent: 'platform-engineering',
        name: `Team ${two(i)}`,
        visibility: 'private',
      });
      await createProject(f.db, {
        path: `platform-engineering/team-${two(i)}/infrastructure-as-code-modules`,
        visibility: 'private',
      });
    }
    const day = (offset: number) => new Date(now + offset * 86_400_000).toISOString().slice(0, 10);
    for (const offset of [3, 30, 300]) await makePat(f.db, user, ['api', 'read_user'], { expiresAt: day(offset) });
    const own = await makeApp(f.db, {
      name: 'Grafana on the operations dashboard cluster',
      ownerId: user.id,
      redirectUris: [
        `${callbackBase}/login/generic_oauth/with/a/rather/long/callback/path`,
        'https://grafana.operations.example.com/login/generic_oauth',
      ],
      scopes: 'openid profile email read_user',
    });
    const consentApp = await makeApp(f.db, {
      name: 'Wiki',
      redirectUris: [`${callbackBase}/cb`],
      scopes: 'openid read_user api',
    });
    const device = await createDeviceGrant(f.db, { applicationId: consentApp.application.id, scopes: ['read_user'] });

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      // Signed out.
      await visit(page, '/users/sign_in', 'sign-in');
      await page.fill('#user_login', 'tess');
      await page.fill('#user_password', 'not the password');
      await press(page, 'Sign in');
      await check(page, 'sign-in-wrong-password');
      await visit(page, '/users/password/new', 'password-reset-request');
      await page.fill('input[type="email"]', 'tess@example.com');
      await press(page, /reset/i);
      await check(page, 'password-reset-sent');
      await visit(page, '/users/password/edit?reset_password_token=nope', 'password-reset-bad-link', 404);
      await visit(page, '/-/profile/emails/confirmation?confirmation_token=nope', 'email-confirmation-bad-link', 404);
      await visit(page, `/-/unsubscribe/${'A'.repeat(40)}`, 'unsubscribe-bad-link', 404);
      await visit(page, '/no/such/page', 'error-404', 404);
      await visit(page, '/oauth/authorize?client_id=x%00&redirect_uri=y&response_type=code', 'error-400', 400);
      await visit(page, `/oauth/authorize?client_id=${'f'.repeat(64)}&redirect_uri=x`, 'error-authorize', 400);

      // The 2FA step, then signed in.
      await page.goto(`${base}/users/sign_in`);
      await page.fill('#user_login', 'tess');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');
      await check(page, 'two-factor-step');
      await page.fill('#user_otp_attempt', otp());
      await press(page, 'Verify code');
      expect(new URL(page.url()).pathname).toBe('/-/profile');
      await check(page, 'overview');

      await visit(page, '/-/profile/emails', 'emails');
      await visit(page, '/-/profile/emails?page=2', 'emails-page-2');
      const email = await f.db.selectFrom('user_emails').select('id').limit(1).executeTakeFirstOrThrow();
      await visit(page, `/-/profile/emails/${email.id}/delete`, 'emails-remove-confirm');
      await visit(page, '/-/profile/notifications', 'notifications');
      await visit(page, '/-/profile/notifications?page=2&project_page=2', 'notifications-page-2');
      await visit(page, '/-/user_settings/active_sessions', 'active-sessions');
      await visit(page, '/-/user_settings/active_sessions?page=2', 'active-sessions-page-2');
      await visit(page, `/-/user_settings/active_sessions/01${'0'.repeat(30)}/revoke`, 'active-sessions-revoke');
      await visit(page, '/-/user_settings/active_sessions/revoke_others', 'active-sessions-revoke-others');
      await visit(page, '/-/user_settings/authorized_applications', 'authorized-applications');
      await visit(page, '/-/user_settings/authorized_applications?page=2', 'authorized-applications-page-2');
      await page.getByRole('link', { name: 'Revoke' }).first().click();
      await page.waitForURL((u) => u.pathname.endsWith('/revoke'));
      await check(page, 'authorized-applications-revoke');
      await visit(page, '/-/user_settings/personal_access_tokens', 'personal-access-tokens');
      await page.getByRole('link', { name: 'Revoke' }).first().click();
      await page.waitForURL((u) => u.pathname.endsWith('/revoke'));
      await check(page, 'personal-access-tokens-revoke');
      await visit(page, '/profile/applications', 'applications');
      await visit(page, '/profile/applications/new', 'applications-new');
      await visit(page, `/profile/applications/${own.application.id}`, 'application');
      await visit(page, `/profile/applications/${own.application.id}/edit`, 'application-edit');
      await visit(page, `/profile/applications/${own.application.id}/renew_secret`, 'application-renew');
      await visit(page, `/profile/applications/${own.application.id}/delete`, 'application-delete');
      await visit(page, '/-/user_settings/password/edit', 'password');
      await visit(page, '/-/profile/two_factor_auth', 'two-factor');

      // Consent and the device flow.
      const authorize = new URLSearchParams({
        client_id: consentApp.clientId,
        redirect_uri: `${callbackBase}/cb`,
        response_type: 'code',
        scope: 'openid read_user api',
        state: 's',
      });
      await visit(page, `/oauth/authorize?${authorize}`, 'consent');
      await visit(page, '/oauth/device', 'device-code');
      await page.fill('#user_code', device.userCode);
      await press(page, 'Continue');
      expect(new URL(page.url()).pathname).toBe('/oauth/device/confirm');
      await check(page, 'device-confirm');
      await visit(page, '/users/sign_out', 'sign-out-confirm');

      // A form whose token went stale.
      await page.goto(`${base}/-/user_settings/password/edit`);
      await page.evaluate(
        `document.querySelectorAll('input[name="authenticity_token"]').forEach((i) => { i.value = '${'x'.repeat(43)}'; });
         document.querySelectorAll('form').forEach((f) => { f.noValidate = true; })`,
      );
      await Promise.all([page.waitForNavigation(), page.locator('main form button[type="submit"]').first().click()]);
      await check(page, 'error-422', { h1: 'The change you requested was rejected' });
    } finally {
      await context.close();
    }

    // Signed out again: a live reset link, a live unsubscribe link and its answer, 405 and 429.
    const signedOut = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const anon = await signedOut.newPage();
    try {
      const resetToken = randomHex();
      // (The reset request above made one for tess already: this one replaces it, as a new request would.)
      const live = { token_digest: sha256Hex(resetToken), expires_at: new Date(Date.now() + 600_000) };
      await f.db
        .insertInto('password_reset_tokens')
        .values({ user_id: user.id, ...live })
        .onConflict((oc) => oc.column('user_id').doUpdateSet(live))
        .execute();
      await visit(anon, `/users/password/edit?reset_password_token=${resetToken}`, 'password-reset');
      const project = await createProject(f.db, {
        path: 'platform-engineering/team-01/a-project-with-a-rather-long-name-for-small-screens',
        visibility: 'private',
      });
      const link = unsubscribeHeaders({ publicUrl: base }, await testKeyRing(), user.id, project.id)[
        'List-Unsubscribe'
      ].slice(1, -1);
      await visit(anon, new URL(link).pathname, 'unsubscribe');
      await press(anon, 'Unsubscribe');
      await check(anon, 'unsubscribed', { h1: 'Unsubscribed' });
      // A page path asked with a method it does not answer: the browser's navigation made a DELETE.
      await anon.route(`${base}/users/sign_in`, (route) => route.continue({ method: 'DELETE' }));
      await visit(anon, '/users/sign_in', 'error-405', 405);
      await anon.unroute(`${base}/users/sign_in`);
      // 60 failed sign-ins from this address within the minute: the next is refused with 429.
      const web = new WebClient(f.app);
      const form = await web.get('/users/sign_in');
      for (let i = 0; i < 60; i++)
        await web.post('/users/sign_in', {
          authenticity_token: WebClient.csrf(form.body),
          'user[login]': `nobody${i}`,
          'user[password]': 'wrong',
        });
      await anon.goto(`${base}/users/sign_in`);
      await anon.fill('#user_login', 'tess');
      await anon.fill('#user_password', PASSWORD);
      const [refused] = await Promise.all([
        anon.waitForResponse((r) => r.url() === `${base}/users/sign_in` && r.request().method() === 'POST'),
        press(anon, 'Sign in'),
      ]);
      expect(refused.status()).toBe(429);
      await check(anon, 'error-429', { h1: 'Too many requests' });
    } finally {
      await signedOut.close();
    }
    expect(walked).toHaveLength(44);
  }, 600_000);
});
