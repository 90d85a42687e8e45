// RFC 7591 dynamic client registration and RFC 7592 read/delete through the real app: off by
// default (no route, no discovery field); with DYNAMIC_CLIENT_REGISTRATION=public, public clients
// only, safe redirect URIs, the configured scopes, a per-address limit that holds under 50
// concurrent requests, RFC 7591 §3.2.2's errors with nothing stored, the consent page always shown,
// and the retention job's 30-day pruning.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { pruneExpiredData } from '../../service/domain/retention';
import { testConfig } from '../support/app';
import { resetDatabase } from '../support/db';
import { authorizeUrl, WebClient } from './support/browser-like';
import { makeUser, PASSWORD, useFixture } from './support/harness';

const ISSUER = 'https://lanyard.example.com';
const f = useFixture({
  config: {
    publicUrl: ISSUER,
    dynamicClientRegistration: { enabled: true, scopes: ['read_user', 'read_api', 'openid', 'profile', 'email'] },
  },
});

const JSON_HEADERS = { 'content-type': 'application/json' };
const register = (metadata: unknown, remoteAddress = '203.0.113.7') =>
  f.app.inject({
    method: 'POST',
    url: '/oauth/register',
    headers: JSON_HEADERS,
    payload: JSON.stringify(metadata),
    remoteAddress,
  });
const GOOD = { client_name: 'My agent', redirect_uris: ['http://127.0.0.1:33418/callback'] };

const applications = () =>
  f.db
    .selectFrom('oauth_applications')
    .select([
      'uid',
      'name',
      'scopes',
      'confidential',
      'trusted',
      'owner_id',
      'dynamically_registered',
      'registration_access_token_digest',
    ])
    .execute();

beforeEach(async () => {
  await resetDatabase(f.db);
});

describe('off by default', () => {
  it('no route (404) and no registration_endpoint in discovery', async () => {
    const app = await buildApp({ db: f.db, config: testConfig({ publicUrl: ISSUER }), logger: false });
    try {
      const res = await app.inject({ method: 'POST', url: '/oauth/register', headers: JSON_HEADERS, payload: '{}' });
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 404, body: { message: '404 Not Found' } });
      const discovery = (await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json();
      expect(discovery).not.toHaveProperty('registration_endpoint');
    } finally {
      await app.close();
    }
    const on = (await f.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(on.registration_endpoint).toBe(`${ISSUER}/oauth/register`);
  });
});

describe('POST /oauth/register', () => {
  it('registers a public client: 201, the RFC 7591 response, the token stored only as its digest', async () => {
    const res = await register({ ...GOOD, scope: 'read_user openid api', grant_types: ['authorization_code'] });
    expect(res.statusCode).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(body).toEqual({
      client_id: expect.stringMatching(/^[0-9a-f]{64}$/),
      client_id_issued_at: expect.any(Number),
      client_name: 'My agent',
      redirect_uris: ['http://127.0.0.1:33418/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      // `api` is not among the configured scopes: left out (RFC 7591 §2 lets the server replace).
      scope: 'openid read_user',
      registration_access_token: expect.stringMatching(/^[0-9a-f]{64}$/),
      registration_client_uri: `${ISSUER}/oauth/register/${body.client_id}`,
    });
    expect(await applications()).toEqual([
      {
        uid: body.client_id,
        name: 'My agent',
        scopes: ['openid', 'read_user'],
        confidential: false,
        trusted: false,
        owner_id: null,
        dynamically_registered: true,
        registration_access_token_digest: createHash('sha256').update(body.registration_access_token).digest('hex'),
      },
    ]);
  });

  it('refuses unsafe or unsupported metadata with RFC 7591 §3.2.2 errors, storing nothing', async () => {
    const redirect = (uris: unknown) => ({ redirect_uris: uris });
    const cases: [unknown, string][] = [
      [{}, 'invalid_redirect_uri'],
      [redirect([]), 'invalid_redirect_uri'],
      [redirect('https://a.example/cb'), 'invalid_redirect_uri'],
      [redirect(['http://agent.example.com/cb']), 'invalid_redirect_uri'],
      [redirect(['https://agent.example.com/cb#frag']), 'invalid_redirect_uri'],
      [redirect(['com.example.agent:/callback']), 'invalid_redirect_uri'],
      [redirect(['javascript:alert(1)']), 'invalid_redirect_uri'],
      [redirect(['/callback']), 'invalid_redirect_uri'],
      [redirect(Array.from({ length: 11 }, (_, i) => `https://agent.example.com/cb${i}`)), 'invalid_redirect_uri'],
      [{ ...GOOD, token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
      [{ ...GOOD, grant_types: ['authorization_code', 'client_credentials'] }, 'invalid_client_metadata'],
      [{ ...GOOD, grant_types: ['password'] }, 'invalid_client_metadata'],
      [{ ...GOOD, grant_types: ['refresh_token'] }, 'invalid_client_metadata'],
      [{ ...GOOD, response_types: ['token'] }, 'invalid_client_metadata'],
      [{ ...GOOD, scope: 'read_user admin' }, 'invalid_client_metadata'],
      [{ ...GOOD, scope: 'api sudo' }, 'invalid_client_metadata'],
      [{ ...GOOD, client_name: 42 }, 'invalid_client_metadata'],
      [{ ...GOOD, client_name: 'x'.repeat(256) }, 'invalid_client_metadata'],
      [['not', 'an', 'object'], 'invalid_client_metadata'],
    ];
    for (const [metadata, error] of cases) {
      const res = await register(metadata);
      expect({ metadata, status: res.statusCode, error: res.json().error }).toEqual({ metadata, status: 400, error });
      expect(typeof res.json().error_description).toBe('string');
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    }
    expect(await applications()).toEqual([]);
    // Nor did the refusals use up the address's registrations.
    expect((await register(GOOD)).statusCode).toBe(201);
  });

  it('50 concurrent registrations from one address: 10 succeed, the rest 429 with Retry-After', async () => {
    const results = await Promise.all(Array.from({ length: 50 }, () => register(GOOD, '198.51.100.9')));
    const statuses = results.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40);
    const limited = results.find((r) => r.statusCode === 429)!;
    expect(limited.json()).toEqual({
      error: 'slow_down',
      error_description: 'Too many client registrations from this address. Retry later.',
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(await applications()).toHaveLength(10);
    // Another address is not affected.
    expect((await register(GOOD, '198.51.100.10')).statusCode).toBe(201);
  });
});

describe('RFC 7592 client configuration endpoint', () => {
  it('reads with the registration access token; deletes (204); everything else is 401', async () => {
    const a = (await register(GOOD)).json();
    const b = (await register({ ...GOOD, client_name: 'Other' })).json();
    const read = (clientId: string, tokenValue?: string, method: 'GET' | 'DELETE' = 'GET') =>
      f.app.inject({
        method,
        url: `/oauth/register/${clientId}`,
        headers: tokenValue ? { authorization: `Bearer ${tokenValue}` } : {},
      });
    const ok = await read(a.client_id, a.registration_access_token);
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual(a);
    for (const res of [
      await read(a.client_id),
      await read(a.client_id, b.registration_access_token),
      await read(a.client_id, 'f'.repeat(64)),
      await read('0'.repeat(64), a.registration_access_token),
      await read(a.client_id, b.registration_access_token, 'DELETE'),
    ]) {
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 401,
        body: { error: 'invalid_token', error_description: 'The access token is invalid' },
      });
      expect(res.headers['www-authenticate']).toBe(
        'Bearer error="invalid_token", error_description="The access token is invalid"',
      );
    }
    expect(await applications()).toHaveLength(2);
    const deleted = await read(a.client_id, a.registration_access_token, 'DELETE');
    expect(deleted.statusCode).toBe(204);
    expect((await read(a.client_id, a.registration_access_token)).statusCode).toBe(401);
    expect((await applications()).map((r) => r.uid)).toEqual([b.client_id]);
  });
});

describe('a dynamically registered client at /oauth/authorize', () => {
  it('needs PKCE, and always gets the consent page marked "dynamically registered", trusted or not', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
    const client = (await register({ ...GOOD, redirect_uris: ['https://agent.example.com/cb'] })).json();
    const base = { redirectUri: 'https://agent.example.com/cb', state: 's' };
    const noPkce = await web.get(authorizeUrl(client.client_id, base));
    expect(new URL(noPkce.headers.location as string).searchParams.get('error')).toBe('invalid_request');
    const withPkce = authorizeUrl(client.client_id, {
      ...base,
      codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      codeChallengeMethod: 'S256',
    });
    // Even marked trusted by hand, and with prompt=none: never skipped.
    await sql`update oauth_applications set trusted = true`.execute(f.db);
    const page = await web.get(withPkce);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<strong>My agent</strong> is requesting access to your account.');
    expect(page.body).toContain('dynamically registered');
    const none = await web.get(`${withPkce}&prompt=none`);
    expect(new URL(none.headers.location as string).searchParams.get('error')).toBe('consent_required');
  });
});

describe('retention', () => {
  it('prunes a dynamically registered application unused for 30 days, keeps one in use and every other app', async () => {
    const idle = (await register(GOOD)).json();
    const used = (await register(GOOD)).json();
    await sql`update oauth_applications set created_at = now() - interval '31 days'`.execute(f.db);
    await sql`insert into oauth_access_tokens (application_id, user_id, token_digest, scopes, expires_at)
      select id, null, 'digest-of-a-recent-token', '{read_user}', now() + interval '1 hour'
      from oauth_applications where uid = ${used.client_id}`.execute(f.db);
    const report = await pruneExpiredData(f.db);
    expect(report.deleted.oauth_applications).toBe(1);
    expect((await applications()).map((a) => a.uid)).toEqual([used.client_id]);
    expect(idle.client_id).not.toBe(used.client_id);
  });
});
