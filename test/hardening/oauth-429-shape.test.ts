// Regression (issue 11, "/oauth/token answered 429 {"message":"Retry later"}"): above 60 failures a
// minute from one address, /oauth/* answers 429 in the OAuth error shape, with Retry-After and
// GitLab's RateLimit-* headers; the sign-in form keeps its HTML page.
import { describe, expect, it } from 'vitest';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();

const token = (values: Record<string, string>, ip: string, headers: Record<string, string> = {}) =>
  f.app.inject({
    method: 'POST',
    url: '/oauth/token',
    remoteAddress: ip,
    headers: { ...FORM, ...headers },
    payload: form(values),
  });

function expectOAuth429(res: Awaited<ReturnType<typeof token>>) {
  expect(res.statusCode).toBe(429);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.json()).toEqual({ error: 'slow_down', error_description: 'Too many failed attempts. Retry later.' });
  expect(res.headers['cache-control']).toBe('no-store');
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.headers['ratelimit-name']).toBe('throttle_failed_credentials');
  expect(res.headers['ratelimit-limit']).toBe('60');
  expect(res.headers['ratelimit-observed']).toBe('60');
  expect(res.headers['ratelimit-remaining']).toBe('0');
  const reset = Number(res.headers['ratelimit-reset']);
  const nowSeconds = Math.floor(Date.now() / 1000);
  expect(reset).toBeGreaterThan(nowSeconds);
  expect(reset).toBeLessThanOrEqual(nowSeconds + 61);
  expect(res.headers['ratelimit-resettime']).toBe(new Date(reset * 1000).toUTCString());
}

describe('/oauth/token answered 429 {"message":"Retry later"}', () => {
  it('the password grant: 429 in the OAuth shape with Retry-After and RateLimit-*', async () => {
    await makeUser(f.db, 'alice');
    const ip = '198.51.100.7';
    for (let i = 0; i < 60; i++) {
      const res = await token({ grant_type: 'password', username: `x${i}`, password: 'no' }, ip);
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 400,
        body: {
          error: 'invalid_grant',
          error_description:
            'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
        },
      });
    }
    expectOAuth429(await token({ grant_type: 'password', username: 'alice', password: PASSWORD }, ip));
  });

  it('client authentication: 429 in the OAuth shape', async () => {
    const c = await makeApp(f.db);
    const ip = '198.51.100.8';
    const attempt = () =>
      token({ grant_type: 'refresh_token', refresh_token: 'x' }, ip, {
        authorization: basic(c.clientId, 'gloas-nope'),
      });
    for (let i = 0; i < 60; i++) {
      const res = await attempt();
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 401,
        body: {
          error: 'invalid_client',
          error_description:
            'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
        },
      });
      expect(res.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    }
    expectOAuth429(await attempt());
    // The revocation endpoint authenticates clients the same way.
    const revoke = await f.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      remoteAddress: ip,
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: form({ token: 'x' }),
    });
    expectOAuth429(revoke);
  });
});
