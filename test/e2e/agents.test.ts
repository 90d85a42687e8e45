// The pages issue 27 changed, in Chromium (Debian's chromium via playwright-core): the consent page
// of a dynamically registered client asking for a resource (the warning, the resource, then
// Authorize to the redirect URI with a code), and the applications page's "Allowed resources"
// field (a bad value shown at the field, a good one stored). Every page: axe-core with 0
// violations in light and dark, no sideways scrolling at 390 px (inspectPage).
import type http from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDynamicClient } from '../../service/domain/dynamic-clients';
import {
  chromiumAvailable as available,
  inspectPage,
  launchChromium,
  listenOnLoopback,
  press,
  startLandingServer,
} from '../support/chromium';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

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

describe.skipIf(!available)('agent pages in chromium', () => {
  it('consent for a dynamically registered client with a resource; the allowed-resources field', async () => {
    await makeUser(f.db, 'erin');
    const registered = await registerDynamicClient(f.db, {
      metadata: { client_name: 'Claude-like agent', redirect_uris: [`${callbackBase}/cb`] },
      address: '192.0.2.5',
      allowedScopes: ['read_user', 'openid'],
    });
    if (!registered.ok) throw new Error(registered.error);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}/users/sign_in`);
      await page.fill('#user_login', 'erin');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');

      const mcp = 'https://mcp.example.com/mcp';
      const authorize = new URL('/oauth/authorize', base);
      for (const [k, v] of Object.entries({
        client_id: registered.application.uid,
        redirect_uri: `${callbackBase}/cb`,
        response_type: 'code',
        state: 'st',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
        resource: mcp,
      }))
        authorize.searchParams.set(k, v);
      await page.goto(authorize.toString());
      expect(await page.textContent('#dynamic-client')).toContain('dynamically registered');
      expect(await page.textContent('#resources')).toContain(mcp);
      await inspectPage(page, 'consent-dynamic-client');
      await Promise.all([
        page.waitForURL((u) => u.pathname === '/cb'),
        page.getByRole('button', { name: 'Authorize' }).click(),
      ]);
      const landed = new URL(page.url());
      expect(landed.searchParams.get('state')).toBe('st');
      expect(landed.searchParams.get('code')).toMatch(/^[0-9a-f]{64}$/);
      const codes = await f.db.selectFrom('oauth_authorization_codes').select('resources').execute();
      expect(codes).toEqual([{ resources: [mcp] }]);

      await page.goto(`${base}/profile/applications/new`);
      await page.fill('#app_name', 'Agent');
      await page.fill('#app_redirect_uri', `${callbackBase}/cb`);
      await page.fill('#app_allowed_resources', 'http://mcp.example.com/mcp');
      await page.check('#app_scopes-read_user');
      await press(page, 'Save application');
      expect(await page.textContent('#app_allowed_resources-error')).toBe(
        'Error: Allowed resources must start with https:// (or http:// for localhost, 127.0.0.1 or [::1])',
      );
      await inspectPage(page, 'applications-allowed-resources-error');
      await page.fill('#app_allowed_resources', mcp);
      if (!(await page.isChecked('#app_scopes-read_user'))) await page.check('#app_scopes-read_user');
      await press(page, 'Save application');
      const apps = await f.db
        .selectFrom('oauth_applications')
        .select('allowed_resources')
        .where('name', '=', 'Agent')
        .execute();
      expect(apps).toEqual([{ allowed_resources: [mcp] }]);
    } finally {
      await context.close();
    }
  }, 180_000);
});
