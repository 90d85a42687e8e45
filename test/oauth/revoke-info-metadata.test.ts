// POST /oauth/revoke (RFC 7009), GET /oauth/token/info, GET /.well-known/oauth-authorization-server.
import { beforeEach, describe, expect, it } from 'vitest';
import { resetDatabase } from '../support/db';
import { obtainCode, WebClient } from './support/browser-like';
import { errorBody, INVALID_TOKEN_BODY, REVOKE_FORBIDDEN_BODY } from './support/contract';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const f = useFixture({ config: { publicUrl: 'https://lanyard.example.com' } });
let c: Awaited<ReturnType<typeof makeApp>>;
let other: Awaited<ReturnType<typeof makeApp>>;
let pub: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;
let aliceId: number;

beforeEach(async () => {
  await resetDatabase(f.db);
  aliceId = (await makeUser(f.db, 'alice')).user.id;
  c = await makeApp(f.db);
  other = await makeApp(f.db, { name: 'Other' });
  pub = await makeApp(f.db, { name: 'Public', confidential: false, scopes: 'read_user' });
  web = new WebClient(f.app);
  await web.signIn('alice', PASSWORD);
});

const post = (url: string, values: Record<string, string | undefined>, headers: Record<string, string> = {}) =>
  f.app.inject({ method: 'POST', url, headers: { ...FORM, ...headers }, payload: form(values) });
const info = (t: string) => f.app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${t}` } });

/** A dead token at /oauth/token/info: the contract's exact 401 (not just the status). */
async function expectDead(t: string) {
  const res = await info(t);
  expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 401, body: INVALID_TOKEN_BODY });
  expect(res.headers['cache-control']).toBe('no-store');
}

async function confidentialTokens() {
  const code = await obtainCode(web, c.clientId);
  return (
    await post(
      '/oauth/token',
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
      { authorization: basic(c.clientId, c.secret) },
    )
  ).json();
}
async function publicTokens() {
  const v = 'p'.repeat(43);
  const code = await obtainCode(web, pub.clientId, { codeChallenge: v, codeChallengeMethod: 'plain' });
  return (
    await post('/oauth/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: pub.clientId,
      code_verifier: v,
    })
  ).json();
}

describe('POST /oauth/revoke', () => {
  it('revoking the access token revokes its refresh token too (and vice versa)', async () => {
    const a = await confidentialTokens();
    const res = await post('/oauth/revoke', { token: a.access_token }, { authorization: basic(c.clientId, c.secret) });
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 200, body: {} });
    await expectDead(a.access_token);
    const refresh = await post(
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: a.refresh_token },
      { authorization: basic(c.clientId, c.secret) },
    );
    expect(refresh.json()).toEqual(errorBody('invalid_grant'));

    const b = await confidentialTokens();
    expect(
      (
        await post('/oauth/revoke', {
          token: b.refresh_token,
          token_type_hint: 'refresh_token',
          client_id: c.clientId,
          client_secret: c.secret,
        })
      ).statusCode,
    ).toBe(200);
    await expectDead(b.access_token);
  });

  it('revoking a refresh token ends its whole chain (earlier access tokens too)', async () => {
    const a = await confidentialTokens();
    const b = (
      await post(
        '/oauth/token',
        { grant_type: 'refresh_token', refresh_token: a.refresh_token },
        { authorization: basic(c.clientId, c.secret) },
      )
    ).json();
    expect((await info(a.access_token)).statusCode).toBe(200);
    await post('/oauth/revoke', { token: b.refresh_token }, { authorization: basic(c.clientId, c.secret) });
    await expectDead(a.access_token);
    await expectDead(b.access_token);
  });

  it('200 {} for unknown tokens (a wrong hint is only a hint)', async () => {
    for (const hint of [undefined, 'access_token', 'refresh_token', 'bogus']) {
      const res = await post(
        '/oauth/revoke',
        { token: 'f'.repeat(64), token_type_hint: hint },
        { authorization: basic(c.clientId, c.secret) },
      );
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 200, body: {} });
    }
    const a = await confidentialTokens();
    await post(
      '/oauth/revoke',
      { token: a.access_token, token_type_hint: 'refresh_token' },
      { authorization: basic(c.clientId, c.secret) },
    );
    await expectDead(a.access_token);
  });

  it("403 for a confidential application's token without that application's credentials", async () => {
    const a = await confidentialTokens();
    const headerSets: Array<Record<string, string>> = [{}, { authorization: basic(other.clientId, other.secret) }];
    for (const headers of headerSets) {
      const res = await post('/oauth/revoke', { token: a.access_token }, headers);
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 403, body: REVOKE_FORBIDDEN_BODY });
    }
    const byIdOnly = await post('/oauth/revoke', { token: a.access_token, client_id: c.clientId });
    expect({ status: byIdOnly.statusCode, body: byIdOnly.json() }).toEqual({
      status: 403,
      body: REVOKE_FORBIDDEN_BODY,
    });
    expect((await info(a.access_token)).statusCode).toBe(200);
  });

  it("a public application's token can be revoked with client_id alone (or nothing)", async () => {
    const a = await publicTokens();
    expect((await post('/oauth/revoke', { token: a.access_token, client_id: pub.clientId })).statusCode).toBe(200);
    await expectDead(a.access_token);
    const b = await publicTokens();
    expect((await post('/oauth/revoke', { token: b.refresh_token })).statusCode).toBe(200);
    await expectDead(b.access_token);
  });

  it('wrong client credentials: 401 invalid_client; no token: 400 invalid_request', async () => {
    const a = await confidentialTokens();
    const res = await post(
      '/oauth/revoke',
      { token: a.access_token },
      { authorization: basic(c.clientId, 'gloas-wrong') },
    );
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 401, body: errorBody('invalid_client') });
    expect(res.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    const res2 = await post('/oauth/revoke', {}, { authorization: basic(c.clientId, c.secret) });
    expect({ status: res2.statusCode, body: res2.json() }).toEqual({ status: 400, body: errorBody('invalid_request') });
  });
});

describe('GET /oauth/token/info', () => {
  it('the exact body, expires_in counting down', async () => {
    const a = await confidentialTokens();
    const row = await f.db.selectFrom('oauth_access_tokens').select('created_at').executeTakeFirstOrThrow();
    const res = await info(a.access_token);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = res.json();
    expect(Object.keys(body)).toEqual([
      'resource_owner_id',
      'scope',
      'expires_in',
      'application',
      'created_at',
      'scopes',
      'expires_in_seconds',
    ]);
    expect(body).toEqual({
      resource_owner_id: aliceId,
      scope: ['api', 'read_user'],
      expires_in: body.expires_in,
      application: { uid: c.clientId },
      created_at: Math.floor(row.created_at.getTime() / 1000),
      scopes: ['api', 'read_user'],
      expires_in_seconds: body.expires_in,
    });
    expect(body.expires_in).toBeGreaterThan(7190);
    expect(body.expires_in).toBeLessThanOrEqual(7200);
    await f.db
      .updateTable('oauth_access_tokens')
      .set({ expires_at: new Date(Date.now() + 50_000) })
      .execute();
    expect((await info(a.access_token)).json().expires_in).toBe(50);
    // ?access_token= works too (RFC 6750 §2.3).
    expect((await f.app.inject({ url: `/oauth/token/info?access_token=${a.access_token}` })).statusCode).toBe(200);
  });

  it('401 invalid_token for missing, unknown, expired and revoked tokens', async () => {
    const a = await confidentialTokens();
    const b = await confidentialTokens();
    await f.db
      .updateTable('oauth_access_tokens')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', 1)
      .execute();
    await post('/oauth/revoke', { token: b.access_token }, { authorization: basic(c.clientId, c.secret) });
    const responses = [
      await f.app.inject({ url: '/oauth/token/info' }),
      await info('f'.repeat(64)),
      await info(a.access_token),
      await info(b.access_token),
      await info(a.refresh_token),
    ];
    for (const res of responses) {
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 401, body: INVALID_TOKEN_BODY });
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });
});

describe('discovery: GET /.well-known/openid-configuration and /.well-known/oauth-authorization-server', () => {
  const DOCUMENT = {
    issuer: 'https://lanyard.example.com',
    authorization_endpoint: 'https://lanyard.example.com/oauth/authorize',
    token_endpoint: 'https://lanyard.example.com/oauth/token',
    revocation_endpoint: 'https://lanyard.example.com/oauth/revoke',
    introspection_endpoint: 'https://lanyard.example.com/oauth/introspect',
    userinfo_endpoint: 'https://lanyard.example.com/oauth/userinfo',
    jwks_uri: 'https://lanyard.example.com/oauth/discovery/keys',
    device_authorization_endpoint: 'https://lanyard.example.com/oauth/authorize_device',
    end_session_endpoint: 'https://lanyard.example.com/oauth/logout',
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    scopes_supported: ['api', 'read_api', 'read_user', 'openid', 'profile', 'email', 'notify', 'offline_access'],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [
      'authorization_code',
      'password',
      'refresh_token',
      'urn:ietf:params:oauth:grant-type:device_code',
      'client_credentials',
    ],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    claim_types_supported: ['normal'],
    claims_supported: [
      'iss',
      'sub',
      'aud',
      'exp',
      'iat',
      'auth_time',
      'nonce',
      'sid',
      'amr',
      'acr',
      'name',
      'nickname',
      'preferred_username',
      'website',
      'profile',
      'picture',
      'groups',
      'groups_direct',
      'email',
      'email_verified',
    ],
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    prompt_values_supported: ['none', 'login', 'consent'],
    code_challenge_methods_supported: ['S256', 'plain'],
    authorization_response_iss_parameter_supported: true,
    dpop_signing_alg_values_supported: [
      'ES256',
      'ES384',
      'ES512',
      'PS256',
      'PS384',
      'PS512',
      'RS256',
      'RS384',
      'RS512',
      'Ed25519',
      'EdDSA',
    ],
  };

  it.each(['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'])(
    '%s: one document (OpenID Connect Discovery §3, RFC 8414 §3) with the public URL as issuer',
    async (url) => {
      const res = await f.app.inject({ url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['cache-control']).toBe('public, max-age=300');
      expect(res.json()).toEqual(DOCUMENT);
      // Member order as written above (fast-json-stringify follows the schema).
      expect(Object.keys(res.json())).toEqual(Object.keys(DOCUMENT));
    },
  );
});
