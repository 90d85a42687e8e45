// The device flow end to end over real HTTP: oauth4webapi plays the CLI (device authorization
// request, then polling at the interval the server gives), while a real headless Chromium signs in
// at verification_uri_complete and approves or denies. An expired code ends the flow as well.
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

type O = typeof import('oauth4webapi');

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = fs.existsSync(CHROMIUM);
if (!available) {
  console.warn(
    `[e2e] SKIPPED device flow: no chromium at ${CHROMIUM} (install it with: apt-get install -y chromium, or set CHROMIUM_PATH)`,
  );
}

const f = useFixture();
let oauth: O;
let as: Awaited<ReturnType<O['processDiscoveryResponse']>>;
let browser: Browser;
let client: { client_id: string };
const opts = () => ({ [oauth.allowInsecureRequests]: true }) as const;

beforeAll(async () => {
  if (!available) return;
  oauth = await import('oauth4webapi');
  await f.app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(f.app.server.address() as AddressInfo).port}`;
  f.config.publicUrl = base;
  const issuer = new URL(base);
  as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...opts() }),
  );
  await makeUser(f.db, 'dana');
  const app = await makeApp(f.db, { name: 'glab-like CLI', confidential: false, scopes: 'api read_user' });
  client = { client_id: app.clientId };
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
});

async function startDeviceFlow(scope: string) {
  const res = await oauth.deviceAuthorizationRequest(as, client, oauth.None(), { scope }, opts());
  return oauth.processDeviceAuthorizationResponse(as, client, res);
}

/** One poll, as a CLI does it: the token response, or the OAuth error code it got. */
async function pollOnce(deviceCode: string) {
  const res = await oauth.deviceCodeGrantRequest(as, client, oauth.None(), deviceCode, opts());
  try {
    return { tokens: await oauth.processDeviceCodeResponse(as, client, res) };
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError) return { error: err.error, description: err.error_description };
    throw err;
  }
}

/** The CLI's loop: wait `interval` between polls, +5 s on slow_down, stop on anything else. */
async function pollUntilDone(deviceCode: string, interval: number) {
  const errors: string[] = [];
  for (;;) {
    await new Promise((r) => setTimeout(r, interval * 1000));
    const outcome = await pollOnce(deviceCode);
    if (outcome.error === 'authorization_pending') errors.push(outcome.error);
    else if (outcome.error === 'slow_down') {
      errors.push(outcome.error);
      interval += 5;
    } else return { ...outcome, errors };
  }
}

/** The person's part in Chromium: open verification_uri_complete, sign in, check the code, decide. */
async function personDecides(
  verificationUriComplete: string,
  userCode: string,
  button: 'Authorize' | 'Deny',
  scopeInWords: string,
) {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await page.goto(verificationUriComplete);
    expect(new URL(page.url()).pathname).toBe('/users/sign_in');
    await page.fill('input[name="user[login]"]', 'dana');
    await page.fill('input[name="user[password]"]', PASSWORD);
    await page.click('button[type="submit"]');
    await page.waitForURL((u) => u.pathname === '/oauth/device');
    expect(await page.inputValue('#user_code')).toBe(userCode);
    // The code step redirects to the consent step (post/redirect/get).
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL((u) => u.pathname === '/oauth/device/confirm');
    expect(await page.textContent('#consent-request')).toBe('glab-like CLI is requesting access to your account.');
    expect(await page.textContent('#scopes')).toBe(scopeInWords);
    // Authorize and Deny sit apart (the gap of .actions), the same buttons as the authorize flow.
    const authorize = (await page.getByRole('button', { name: 'Authorize' }).boundingBox())!;
    const deny = (await page.getByRole('button', { name: 'Deny' }).boundingBox())!;
    expect(deny.x - (authorize.x + authorize.width)).toBeGreaterThanOrEqual(8);
    await page.getByRole('button', { name: button }).click();
    await page.waitForURL((u) => !u.pathname.startsWith('/oauth/device/confirm'));
    const decided = { path: new URL(page.url()).pathname, heading: await page.textContent('h1') };
    // Back returns to the consent step's GET: no "Confirm Form Resubmission", and nothing is decided again.
    const back = await page.goBack();
    expect(back?.request().method()).toBe('GET');
    expect(new URL(page.url()).pathname).toBe('/oauth/device/confirm');
    expect(await page.textContent('#user_code-error')).toBe(
      'Error: That code is not right. Check the code shown on your device and enter it again',
    );
    return decided;
  } finally {
    await context.close();
  }
}

const tokenCount = async () =>
  (await sql<{ n: number }>`select count(*)::int as n from oauth_access_tokens`.execute(f.db)).rows[0].n;

describe.skipIf(!available)('device flow: oauth4webapi polls while Chromium approves or denies', () => {
  it('approved: pending while the person signs in, then one token response that works on the API', async () => {
    const device = await startDeviceFlow('read_user');
    expect(device).toMatchObject({
      user_code: expect.stringMatching(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/),
      verification_uri: `${f.config.publicUrl}/oauth/device`,
      expires_in: 300,
      interval: 5,
    });
    expect(await pollOnce(device.device_code)).toEqual({
      error: 'authorization_pending',
      description:
        "The authorization request is still pending as the end user hasn't yet completed the user-interaction steps.",
    });

    const decided = await personDecides(
      device.verification_uri_complete!,
      device.user_code,
      'Authorize',
      'Read your profile: your name, username and e-mail addresses',
    );
    expect(decided).toEqual({ path: '/oauth/device/authorized', heading: 'Device successfully authorized' });

    const done = await pollUntilDone(device.device_code, device.interval!);
    expect(done.errors).toEqual([]);
    expect(done.tokens).toMatchObject({ token_type: 'bearer', scope: 'read_user', expires_in: 7200 });
    expect(done.tokens!.refresh_token).toMatch(/^[0-9a-f]{64}$/);
    const me = await fetch(`${f.config.publicUrl}/api/v4/user`, {
      headers: { authorization: `Bearer ${done.tokens!.access_token}` },
    });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { username: string }).username).toBe('dana');
    // The CLI polling once more with the spent code (after the interval) gets invalid_grant.
    await sql`update oauth_device_grants set last_polled_at = now() - interval '1 minute'`.execute(f.db);
    expect((await pollOnce(device.device_code)).error).toBe('invalid_grant');
  }, 60_000);

  it('denied: the CLI gets access_denied and stops; no token is issued', async () => {
    const before = await tokenCount();
    const device = await startDeviceFlow('api');
    const decided = await personDecides(
      device.verification_uri_complete!,
      device.user_code,
      'Deny',
      'Read and change everything your account can reach, including all your groups and projects',
    );
    expect(decided).toEqual({ path: '/oauth/device/denied', heading: 'Device authorization denied' });
    const outcome = await pollOnce(device.device_code);
    expect(outcome.error).toBe('access_denied');
    expect(outcome.description).toBe('The resource owner or authorization server denied the request.');
    expect(await tokenCount()).toBe(before);
  }, 60_000);

  it('expired: the CLI gets expired_token and stops', async () => {
    const device = await startDeviceFlow('read_user');
    await sql`update oauth_device_grants set expires_at = now() - interval '1 second' where status = 'pending'`.execute(
      f.db,
    );
    expect((await pollOnce(device.device_code)).error).toBe('expired_token');
  });
});
