// Browsers never get JSON (contract §7): every page route and every browser-facing OAuth error is
// an HTML page in the layout — 404, /favicon.ico, 405, 400, 429 with the time left, the rejected
// form with a way back, /oauth/authorize's errors words first — while /api/v4 and the machine
// endpoints of /oauth keep their JSON exactly.
import { beforeEach, describe, expect, it } from 'vitest';
import { resetDatabase } from '../support/db';
import { authorizeUrl, WebClient } from '../oauth/support/browser-like';
import { FORM, form, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture({ config: { publicUrl: 'https://lanyard.example.com' } });

beforeEach(async () => {
  await resetDatabase(f.db);
});

type Res = { statusCode: number; headers: Record<string, unknown>; body: string };

/** An HTML page in the layout: status, type, the page CSP, the title and the way back. */
function expectPage(res: Res, status: number, title: string) {
  expect({ status: res.statusCode, type: res.headers['content-type'] }).toEqual({
    status,
    type: 'text/html; charset=utf-8',
  });
  expect(res.headers['content-security-policy']).toContain("script-src 'self'");
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.body).toContain(`<h1>${title}</h1>`);
  expect(res.body).toMatch(/<link rel="stylesheet" href="\/-\/assets\/lanyard-[0-9a-f]{16}\.css">/);
  expect(res.body).toMatch(/<a class="button primary" id="error-back" href="[^"]+">/);
}

const backHref = (body: string) => /id="error-back" href="([^"]+)"/.exec(body)?.[1];

describe('pages a browser lands on', () => {
  it('an unknown path is the 404 page, with a way back to the start', async () => {
    for (const url of ['/nope', '/profile/nope/deeper?x=1', '/-/profile/applications/x/y', '/users']) {
      const res = await f.app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
      expectPage(res, 404, 'Page not found');
      expect(backHref(res.body)).toBe('/');
    }
  });

  it('/favicon.ico and /favicon.svg are a small SVG icon, cached a day; pages link it', async () => {
    for (const url of ['/favicon.ico', '/favicon.svg']) {
      const res = await f.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('image/svg+xml');
      expect(res.headers['cache-control']).toBe('public, max-age=86400');
      expect(res.body).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      expect(res.body.length).toBeLessThan(1024);
    }
    const signIn = await f.app.inject({ method: 'GET', url: '/users/sign_in' });
    expect(signIn.body).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">');
  });

  it('a page path asked with another method is 405 with Allow', async () => {
    const del = await f.app.inject({ method: 'DELETE', url: '/users/sign_in' });
    expectPage(del, 405, 'Method not allowed');
    expect(del.headers.allow).toBe('GET, HEAD, POST');
    const put = await f.app.inject({ method: 'PUT', url: '/-/profile/two_factor_auth' });
    expectPage(put, 405, 'Method not allowed');
    expect(put.headers.allow).toBe('GET, HEAD, POST');
    // A parameterised page path too.
    const patch = await f.app.inject({ method: 'PATCH', url: '/-/profile/emails/12/primary' });
    expect(patch.statusCode).toBe(405);
    expect(patch.headers.allow).toBe('POST');
  });

  it('a NUL in /oauth/authorize, a malformed escape, a bad page parameter: the 400 page naming the parameter', async () => {
    const c = await makeApp(f.db);
    const nul = await f.app.inject({ method: 'GET', url: `${authorizeUrl(c.clientId)}&state=a%00b` });
    expectPage(nul, 400, 'Bad request');
    expect(nul.body).toContain('Lanyard could not read this request: state is invalid.');
    const malformed = await f.app.inject({ method: 'GET', url: '/profile/applications/%E0%A4%A' });
    expectPage(malformed, 400, 'Bad request');
    const badToken = await f.app.inject({ method: 'GET', url: '/users/password/edit?reset_password_token=a%00' });
    expectPage(badToken, 400, 'Bad request');
    expect(badToken.body).toContain('reset_password_token is invalid');
  });

  it('too many sign-in attempts: 429 with the time left in words, Retry-After, and back to sign in', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    let res: Res | undefined;
    const page = await web.get('/users/sign_in');
    for (let i = 0; i < 70; i++) {
      // Unknown logins: the per-address limit (60 failures a minute) answers, not the account lock.
      res = await web.post('/users/sign_in', {
        authenticity_token: WebClient.csrf(page.body),
        'user[login]': `nobody${i}`,
        'user[password]': 'wrong',
      });
      if (res.statusCode === 429) break;
    }
    expectPage(res!, 429, 'Too many requests');
    const retryAfter = Number(res!.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(res!.body).toMatch(
      /Too many failed sign-in attempts\. For your security, try again in \d+ (second|minute|hour)s?\./,
    );
    expect(backHref(res!.body)).toBe('/users/sign_in');
  });

  it('a rejected form (no or wrong authenticity token): 422, words first, back to the form it came from', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    await web.signIn('alice', PASSWORD);
    const res = await web.post(
      '/-/profile/two_factor_auth',
      { authenticity_token: 'forged', pin_code: '123456' },
      { referer: 'https://lanyard.example.com/-/profile/two_factor_auth' },
    );
    expectPage(res, 422, 'The change you requested was rejected');
    expect(res.body.indexOf('id="error-message"')).toBeLessThan(res.body.indexOf('id="error-code"'));
    expect(res.body).toContain('Invalid or missing authenticity token.');
    expect(backHref(res.body)).toBe('/-/profile/two_factor_auth');
    // Only this site's page becomes the way back: a path that is not ours (//host) never does.
    const foreign = await web.post(
      '/users/sign_out',
      { authenticity_token: 'forged' },
      { referer: 'https://lanyard.example.com//evil.example/x', origin: 'https://lanyard.example.com' },
    );
    expectPage(foreign, 422, 'The change you requested was rejected');
    expect(backHref(foreign.body)).toBe('/');
  });

  it('a form from another site: 403 page; a repeated field: 400 page', async () => {
    const page = await f.app.inject({ method: 'GET', url: '/users/sign_in' });
    const res = await f.app.inject({
      method: 'POST',
      url: '/users/sign_in',
      headers: { ...FORM, origin: 'https://evil.example' },
      payload: form({ 'user[login]': 'a', 'user[password]': 'b', authenticity_token: WebClient.csrf(page.body) }),
    });
    expectPage(res, 403, 'Forbidden');
  });

  it('/oauth/authorize with an unknown client or an unregistered redirect URI: words, then the code; no way back to the app', async () => {
    const c = await makeApp(f.db, { name: 'Grafana' });
    const unknown = await f.app.inject({ method: 'GET', url: authorizeUrl('f'.repeat(64)) });
    expectPage(unknown, 400, 'Unknown application');
    expect(unknown.body).toContain('<strong id="error-code">invalid_client</strong>');
    expect(backHref(unknown.body)).toBe('/');
    const badUri = await f.app.inject({
      method: 'GET',
      url: authorizeUrl(c.clientId, { redirectUri: 'https://evil.example/cb' }),
    });
    expectPage(badUri, 400, 'This application cannot send you back');
    expect(badUri.body).not.toContain('evil.example');
    expect(backHref(badUri.body)).toBe('/');
  });
});

describe('machine endpoints keep their JSON', () => {
  it('/api/v4: {"error":"404 Not Found"} for unknown routes, exactly application/json, whatever Accept', async () => {
    for (const accept of ['text/html', 'application/json', '*/*']) {
      const res = await f.app.inject({ method: 'GET', url: '/api/v4/nope', headers: { accept } });
      expect([res.statusCode, res.headers['content-type'], res.body]).toEqual([
        404,
        'application/json',
        '{"error":"404 Not Found"}',
      ]);
    }
  });

  it('/oauth/token, /oauth/revoke, /oauth/introspect, userinfo, token info, device authorization: JSON to a browser too', async () => {
    const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
    const token = await f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, ...html },
      payload: 'grant_type=a%00',
    });
    expect([token.statusCode, token.json().error]).toEqual([400, 'invalid_request']);
    for (const [method, url] of [
      ['POST', '/oauth/revoke'],
      ['POST', '/oauth/introspect'],
      ['GET', '/oauth/userinfo'],
      ['GET', '/oauth/token/info'],
      ['POST', '/oauth/authorize_device'],
      ['GET', '/.well-known/nope'],
      ['GET', '/oauth/nope'],
    ] as const) {
      const res = await f.app.inject({ method, url, headers: html });
      expect({ url, type: res.headers['content-type'] }).toEqual({
        url,
        type: expect.stringMatching(/^application\/json/),
      });
      expect(() => res.json()).not.toThrow();
    }
    const discovery = await f.app.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers: html });
    expect(discovery.statusCode).toBe(200);
    expect(discovery.json().issuer).toBeDefined();
  });
});
