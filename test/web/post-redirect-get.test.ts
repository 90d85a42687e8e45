// Back after a POST never resubmits: every form POST a page makes (read from the app's own route
// table, so a new one must be added here) answers a redirect, which the browser follows with a
// GET (post/redirect/get), or is one of the documented exceptions below. A refused form answers
// 303 back to its page with the errors in the flash, or its page again with a 4xx: resubmitting it
// fails the same way and changes nothing.
import { beforeEach, describe, expect, it } from 'vitest';
import { createDeviceGrant } from '../../service/domain/device-grants';
import { listRoutes } from '../attack/support';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from '../oauth/support/harness';

const f = useFixture();

/**
 * The page POST routes that do not answer a redirect on success, and why that is safe.
 * Everything else must answer 303 (302 for the sign-in and consent redirects, as GitLab's).
 */
const EXCEPTIONS: Record<string, string> = {
  // Called by the pages' script with fetch(), never a form navigation: JSON in, JSON out.
  'POST /-/profile/two_factor_auth/webauthn/options': 'script (fetch), JSON',
  'POST /users/sign_in/webauthn/options': 'script (fetch), JSON',
  // OpenID Connect RP-initiated logout (§2 allows POST): the relying party's auto-submitted form.
  // With a valid hint it signs out and redirects; otherwise it asks "Sign out of Lanyard?" with a
  // page that changes nothing, so posting it again asks again.
  'POST /oauth/logout': 'RP-initiated logout: redirects, or a question that changes nothing',
};

/**
 * Page POST routes that answer a page (200) on success, and why. They still answer a redirect or a
 * 4xx when refused (the last test). Reloading the unsubscribe answer posts the one-click again,
 * which changes nothing (test/web/unsubscribe.test.ts).
 */
const RENDERED: Record<string, string> = {
  // RFC 8058 §3.2: a mail client's one-click POST expects its answer, not a redirect; the page's
  // own Unsubscribe button posts the same body. Undo answers its outcome in the same way.
  'POST /-/unsubscribe/:token': 'RFC 8058 one-click: 200 "Unsubscribed" with Undo',
  'POST /-/unsubscribe/undo': '200 "Notifications restored" (409 when changed since)',
};

/**
 * Redirects with 302 rather than 303, as GitLab's (Devise's) do: browsers follow a 302 after a POST
 * with a GET too, so Back and reload never post again either.
 */
const FOUND = new Set(['POST /users/sign_in', 'POST /users/sign_out', 'POST /oauth/authorize']);

/** Page POST routes: not /api/v4 and not the OAuth machine endpoints (JSON for clients, not browsers). */
const MACHINE = new Set([
  '/oauth/token',
  '/oauth/revoke',
  '/oauth/introspect',
  '/oauth/userinfo',
  '/oauth/authorize_device',
  '/oauth/register',
]);
const pagePosts = () =>
  listRoutes(f.app)
    .filter((r) => r.method === 'POST' && !r.url.startsWith('/api/') && !MACHINE.has(r.url))
    .map((r) => `POST ${r.url}`)
    .sort();

/** A route's successful submission: the request made, and the redirect it must answer. */
type Success = (web: WebClient, csrf: string) => Promise<{ res: Awaited<ReturnType<WebClient['post']>>; to: string }>;

let web: WebClient;
let csrf: string;
let userId: number;

beforeEach(async () => {
  await resetDatabase(f.db, ['service_keys']);
  userId = (await makeUser(f.db, 'alice')).user.id;
  web = new WebClient(f.app);
  expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
  csrf = WebClient.csrf((await web.get('/-/profile')).body);
});

const post = (path: string, values: Record<string, string> = {}) =>
  web.post(path, { authenticity_token: csrf, ...values });

const SUCCESSES: Record<string, Success> = {
  'POST /-/profile/emails': async () => ({
    res: await post('/-/profile/emails', { 'email[email]': 'alice.work@example.com' }),
    to: '/-/profile/emails',
  }),
  'POST /-/profile/notifications': async () => ({
    res: await post('/-/profile/notifications', { level: 'watch', notification_email: 'alice@example.com' }),
    to: '/-/profile/notifications',
  }),
  'POST /-/user_settings/active_sessions/revoke_others': async () => ({
    res: await post('/-/user_settings/active_sessions/revoke_others'),
    to: '/-/user_settings/active_sessions',
  }),
  'POST /-/user_settings/personal_access_tokens': async () => ({
    res: await post('/-/user_settings/personal_access_tokens', {
      'personal_access_token[name]': 'ci',
      'personal_access_token[expires_at]': new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10),
      'personal_access_token[scopes][]': 'read_user',
    }),
    to: '/-/user_settings/personal_access_tokens',
  }),
  'POST /profile/applications': async () => {
    const res = await post('/profile/applications', {
      'doorkeeper_application[name]': 'Grafana',
      'doorkeeper_application[redirect_uri]': 'https://grafana.example/cb',
      'doorkeeper_application[scopes][]': 'read_user',
    });
    const { id } = await f.db.selectFrom('oauth_applications').select('id').executeTakeFirstOrThrow();
    return { res, to: `/profile/applications/${id}` };
  },
  'POST /-/user_settings/password': async () => ({
    res: await post('/-/user_settings/password', {
      'user[password]': PASSWORD,
      'user[new_password]': 'a brand new passphrase 2026',
      'user[password_confirmation]': 'a brand new passphrase 2026',
    }),
    to: '/-/user_settings/password/edit',
  }),
  'POST /oauth/device': async () => {
    const app = await makeApp(f.db, { name: 'CLI' });
    const grant = await createDeviceGrant(f.db, { applicationId: app.application.id, scopes: ['read_user'] });
    const res = await post('/oauth/device', { user_code: grant.userCode });
    return { res, to: `/oauth/device/confirm?user_code=${grant.userCode}` };
  },
  'POST /oauth/logout/confirm': async () => {
    const res = await post('/oauth/logout/confirm');
    return { res, to: '/oauth/logout' };
  },
  'POST /users/sign_out': async () => ({ res: await post('/users/sign_out'), to: '/users/sign_in' }),
  'POST /oauth/authorize': async () => {
    const app = await makeApp(f.db, { name: 'Wiki', redirectUris: [REDIRECT_URI] });
    const query = new URLSearchParams({
      client_id: app.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'read_user',
      state: 's',
    });
    const consent = await web.get(`/oauth/authorize?${query}`);
    const fields = Object.fromEntries(
      [...consent.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    const res = await web.post('/oauth/authorize', { ...fields, decision: 'deny' });
    return { res, to: `${REDIRECT_URI}?error=access_denied` };
  },
};

describe('every page POST answers a redirect (post/redirect/get)', () => {
  it('the page POST routes are the ones listed here: a new one must say how it redirects', () => {
    const listed = pagePosts();
    expect(listed.length).toBeGreaterThan(30);
    for (const route of Object.keys(EXCEPTIONS)) expect(listed).toContain(route);
    for (const route of [...Object.keys(SUCCESSES), ...FOUND, ...Object.keys(RENDERED)])
      expect(listed).toContain(route);
  });

  it.each(Object.keys(SUCCESSES))('%s: a successful form answers a redirect, followed with a GET', async (route) => {
    const { res, to } = await SUCCESSES[route](web, csrf);
    expect({ route, status: res.statusCode, body: res.body }).toEqual({
      route,
      status: FOUND.has(route) ? 302 : 303,
      body: '',
    });
    expect(res.headers.location?.startsWith(to)).toBe(true);
    expect(res.headers['cache-control']).toBe('no-store');
    if (to.startsWith('/')) expect((await web.get(res.headers.location!)).statusCode).toBeLessThan(400);
  });

  it('every page POST, refused (an empty form with a valid CSRF token): a redirect or a 4xx page, never a 200', async () => {
    const answers: Record<string, number> = {};
    for (const route of pagePosts()) {
      if (route in EXCEPTIONS) continue;
      // A fresh signed-in browser each time: some refusals (sign-in) start the session again.
      const browser = new WebClient(f.app);
      await browser.signIn('alice', PASSWORD);
      const token = WebClient.csrf((await browser.get('/-/profile')).body);
      const path = route
        .slice('POST '.length)
        .replace(':kind', 'groups')
        .replace(':token', 'A'.repeat(40))
        .replace(/:[a-z]+/g, '999999');
      const res = await browser.post(path, { authenticity_token: token });
      answers[route] = res.statusCode;
      if (res.statusCode < 400)
        expect({ route, status: res.statusCode }).toEqual({ route, status: FOUND.has(route) ? 302 : 303 });
      else expect(res.headers['content-type'], route).toBe('text/html; charset=utf-8');
    }
    expect(Object.values(answers).filter((s) => s === 200 || s === 201)).toEqual([]);
    expect(Object.keys(answers).length).toBeGreaterThan(30);
  });

  it('sign-in: the password answers 302 to the account (as GitLab), a wrong one the form again at 401', async () => {
    const fresh = new WebClient(f.app);
    const form = await fresh.get('/users/sign_in');
    const wrong = await fresh.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(form.body),
      'user[login]': 'alice',
      'user[password]': 'not it',
    });
    expect(wrong.statusCode).toBe(401);
    const right = await fresh.signIn('alice', PASSWORD);
    expect([right.statusCode, right.headers.location]).toEqual([302, '/-/profile']);
    expect(userId).toBeGreaterThan(0);
  });

  it('sign-in with two-factor: the password answers 303 to the sign-in page, which shows the code step', async () => {
    await makeUser(f.db, 'tess', { twoFactor: true });
    const web = new WebClient(f.app);
    const form = await web.get('/users/sign_in');
    const password = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(form.body),
      'user[login]': 'tess',
      'user[password]': PASSWORD,
    });
    expect([password.statusCode, password.headers.location, password.body]).toEqual([303, '/users/sign_in', '']);
    expect(password.headers['cache-control']).toBe('no-store');
    // Reload and Back repeat the GET: the code step each time, and the password is not sent again.
    for (let i = 0; i < 2; i++) {
      const step = await web.get('/users/sign_in');
      expect(step.statusCode).toBe(200);
      expect(step.body).toContain('<h1>Two-factor authentication</h1>');
      expect(step.body).not.toContain('name="user[password]"');
    }
  });
});
