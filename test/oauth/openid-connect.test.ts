// OpenID Connect through the real app on real PostgreSQL: the ID token (verified with `jose`
// against the published JWKS), userinfo, introspection, nonce/prompt/max_age, and the bad-input
// matrix of the issue with exact statuses, headers and bodies.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { beforeEach, describe, expect, it } from 'vitest';
import { addMember, createGroup } from '../../service/domain/namespaces';
import { setUserState } from '../../service/domain/users';
import { resetDatabase } from '../support/db';
import { authorizeUrl, consentFields, obtainCode, WebClient } from './support/browser-like';
import { errorBody } from './support/contract';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const ISSUER = 'https://lanyard.example.com';
const home = mkdtempSync(path.join(tmpdir(), 'lanyard-oidc-'));
const f = useFixture({ config: { publicUrl: ISSUER, home } });
let app: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;
let aliceId: number;

beforeEach(async () => {
  await resetDatabase(f.db);
  aliceId = (await makeUser(f.db, 'alice')).user.id;
  app = await makeApp(f.db, { scopes: 'read_user openid profile email' });
  web = new WebClient(f.app);
  await web.signIn('alice', PASSWORD);
});

const post = (url: string, values: Record<string, string | undefined>, headers: Record<string, string> = {}) =>
  f.app.inject({ method: 'POST', url, headers: { ...FORM, ...headers }, payload: form(values) });

async function exchange(code: string, client = app) {
  return post(
    '/oauth/token',
    { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
    { authorization: basic(client.clientId, client.secret) },
  );
}

async function jwks(): Promise<JSONWebKeySet> {
  return (await f.app.inject({ url: '/oauth/discovery/keys' })).json();
}

async function verify(idToken: string, nonce?: string) {
  const { payload, protectedHeader } = await jwtVerify(idToken, createLocalJWKSet(await jwks()), {
    issuer: ISSUER,
    audience: app.clientId,
    algorithms: ['RS256'],
  });
  if (nonce !== undefined) expect(payload.nonce).toBe(nonce);
  return { payload, protectedHeader };
}

describe('JWKS', () => {
  it('GET /oauth/discovery/keys: one RSA 2048 public key, GitLab cache headers, no private member', async () => {
    const res = await f.app.inject({ url: '/oauth/discovery/keys' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    // An hour (GitLab: a day), so a key staged by `secrets rotate signing-key` is in every cache before it signs.
    expect(res.headers['cache-control']).toBe('max-age=3600, public, must-revalidate, no-transform');
    const body = res.json();
    expect(body.keys).toHaveLength(1);
    const [key] = body.keys;
    expect(Object.keys(key).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
    expect(key).toMatchObject({ kty: 'RSA', e: 'AQAB', use: 'sig', alg: 'RS256' });
    expect(Buffer.from(key.n, 'base64url').length * 8).toBe(2048);
  });
});

describe('ID token on the code exchange and on refresh', () => {
  it('openid profile email + nonce: RS256 with kid, GitLab claims, auth_time, 120 s lifetime', async () => {
    const group = await createGroup(f.db, { path: 'acme' });
    await createGroup(f.db, { path: 'sub', parent: 'acme' });
    await createGroup(f.db, { path: 'other' });
    await addMember(f.db, { group: group.full_path, username: 'alice', access: 'developer' });
    const before = Math.floor(Date.now() / 1000);
    const code = await obtainCodeWith({ scope: 'openid profile email', nonce: 'n-0S6_WzA2Mj' });
    const res = await exchange(code);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual([
      'access_token',
      'token_type',
      'expires_in',
      'refresh_token',
      'scope',
      'created_at',
      'id_token',
    ]);
    expect(body.scope).toBe('openid profile email');
    const { payload, protectedHeader } = await verify(body.id_token, 'n-0S6_WzA2Mj');
    expect(protectedHeader).toEqual({ alg: 'RS256', kid: (await jwks()).keys[0].kid, typ: 'JWT' });
    expect(payload).toEqual({
      iss: ISSUER,
      sub: String(aliceId),
      aud: app.clientId,
      exp: payload.iat! + 120,
      iat: payload.iat,
      auth_time: payload.auth_time,
      nonce: 'n-0S6_WzA2Mj',
      sid: expect.stringMatching(/^[0-9a-f]{32}$/),
      // RFC 8176: signed in with a password alone.
      amr: ['pwd'],
      acr: 'pwd',
      name: 'alice',
      nickname: 'alice',
      preferred_username: 'alice',
      profile: `${ISSUER}/alice`,
      groups: ['acme', 'acme/sub'],
      groups_direct: ['acme'],
      email: 'alice@example.com',
      email_verified: true,
    });
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.auth_time).toBeLessThanOrEqual(payload.iat!);

    // Refresh: a new ID token, same sub and auth_time, no nonce (OIDC Core §12.2).
    const refreshed = await post(
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: body.refresh_token },
      { authorization: basic(app.clientId, app.secret) },
    );
    expect(refreshed.statusCode).toBe(200);
    const again = await verify(refreshed.json().id_token);
    expect(again.payload.sub).toBe(String(aliceId));
    expect(again.payload.auth_time).toBe(payload.auth_time);
    expect(again.payload.nonce).toBeUndefined();
    expect(again.payload.sid).toBe(payload.sid);
    expect(again.payload.amr).toEqual(['pwd']);
    expect(again.payload.acr).toBe('pwd');
  });

  it('sid: one per browser session, the same for every application and every refresh of it', async () => {
    const other = await makeApp(f.db, { name: 'Other', scopes: 'openid' });
    const sidOf = async (code: string, client = app) =>
      (await verifyFor(client, (await exchange(code, client)).json().id_token)).payload.sid;
    const first = await sidOf(await obtainCodeWith({ scope: 'openid' }));
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    expect(await sidOf(await obtainCodeWith({ scope: 'openid' }))).toBe(first);
    expect(await sidOf(await obtainCodeWith({ scope: 'openid' }, other), other)).toBe(first);
    // The session's sid is not its cookie: nothing of the cookie's value is in it.
    expect(web.cookieHeader).not.toContain(first as string);
    // Another browser session of the same person: another sid.
    const second = new WebClient(f.app);
    await second.signIn('alice', PASSWORD);
    const code = await obtainCode(second, app.clientId, { scope: 'openid' });
    expect(await sidOf(code)).not.toBe(first);
  });

  it('openid alone: only the registered claims (no profile, no email); no nonce when none was sent', async () => {
    const code = await obtainCodeWith({ scope: 'openid' });
    const { payload } = await verify((await exchange(code)).json().id_token);
    expect(Object.keys(payload).sort()).toEqual(['acr', 'amr', 'aud', 'auth_time', 'exp', 'iat', 'iss', 'sid', 'sub']);
  });

  it('no openid in the grant: no id_token', async () => {
    const code = await obtainCodeWith({ scope: 'read_user' });
    const body = (await exchange(code)).json();
    expect(body.id_token).toBeUndefined();
    expect(body.scope).toBe('read_user');
  });
});

describe('GET|POST /oauth/userinfo', () => {
  const USERINFO_PATH = '/oauth/userinfo';

  it('the claims of the token scopes (no groups_direct), GET with Bearer and POST with a form token', async () => {
    const token = (await exchange(await obtainCodeWith({ scope: 'openid profile email' }))).json().access_token;
    const expected = {
      sub: String(aliceId),
      name: 'alice',
      nickname: 'alice',
      preferred_username: 'alice',
      profile: `${ISSUER}/alice`,
      groups: [],
      email: 'alice@example.com',
      email_verified: true,
    };
    const get = await f.app.inject({ url: USERINFO_PATH, headers: { authorization: `Bearer ${token}` } });
    expect(get.statusCode).toBe(200);
    expect(get.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(get.headers['cache-control']).toBe('no-store');
    expect(get.json()).toEqual(expected);
    const viaPost = await post(USERINFO_PATH, { access_token: token });
    expect(viaPost.statusCode).toBe(200);
    expect(viaPost.json()).toEqual(expected);
  });

  it('a token without openid → 403 insufficient_scope, and openid tokens open no /api/v4', async () => {
    const apiToken = (await exchange(await obtainCodeWith({ scope: 'read_user' }))).json().access_token;
    const res = await f.app.inject({ url: USERINFO_PATH, headers: { authorization: `Bearer ${apiToken}` } });
    expect(res.statusCode).toBe(403);
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="Doorkeeper", error="insufficient_scope", error_description="The request requires higher privileges than provided by the access token.", scope="openid"',
    );
    expect(res.json()).toEqual({
      error: 'insufficient_scope',
      error_description: 'The request requires higher privileges than provided by the access token.',
    });
    const oidcToken = (await exchange(await obtainCodeWith({ scope: 'openid profile email' }))).json().access_token;
    const api = await f.app.inject({ url: '/api/v4/user', headers: { authorization: `Bearer ${oidcToken}` } });
    expect([api.statusCode, api.headers['content-type'], api.json()]).toEqual([
      403,
      'application/json',
      {
        error: 'insufficient_scope',
        error_description: 'The request requires higher privileges than provided by the access token.',
        scope: 'api read_api read_user',
      },
    ]);
  });

  it('missing, unknown, expired and revoked tokens → 401 with WWW-Authenticate invalid_token', async () => {
    const header = (d: string) => `Bearer realm="Doorkeeper", error="invalid_token", error_description="${d}"`;
    const expectInvalid = async (headers: Record<string, string>, description: string) => {
      const res = await f.app.inject({ url: USERINFO_PATH, headers });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe(header(description));
      expect(res.json()).toEqual({ error: 'invalid_token', error_description: description });
    };
    await expectInvalid({}, 'The access token is invalid');
    await expectInvalid({ authorization: `Bearer ${'0'.repeat(64)}` }, 'The access token is invalid');
    const expired = (await exchange(await obtainCodeWith({ scope: 'openid' }))).json().access_token;
    await f.db
      .updateTable('oauth_access_tokens')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .execute();
    await expectInvalid({ authorization: `Bearer ${expired}` }, 'The access token expired');
    const revoked = (await exchange(await obtainCodeWith({ scope: 'openid' }))).json().access_token;
    await post('/oauth/revoke', { token: revoked }, { authorization: basic(app.clientId, app.secret) });
    await expectInvalid({ authorization: `Bearer ${revoked}` }, 'The access token was revoked');
  });
});

describe('POST /oauth/introspect (RFC 7662)', () => {
  const introspect = (values: Record<string, string | undefined>, headers: Record<string, string> = {}) =>
    post('/oauth/introspect', values, headers);

  it('a live access token: active with scope, client_id, username, token_type, exp, iat, sub, aud, iss', async () => {
    const tokens = (await exchange(await obtainCodeWith({ scope: 'openid email' }))).json();
    const res = await introspect({ token: tokens.access_token }, { authorization: basic(app.clientId, app.secret) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({
      active: true,
      scope: 'openid email',
      client_id: app.clientId,
      username: 'alice',
      token_type: 'Bearer',
      exp: tokens.created_at + 7200,
      iat: tokens.created_at,
      sub: String(aliceId),
      aud: app.clientId,
      iss: ISSUER,
    });
    const refresh = await introspect({
      token: tokens.refresh_token,
      token_type_hint: 'refresh_token',
      client_id: app.clientId,
      client_secret: app.secret,
    });
    expect(refresh.json()).toEqual({
      active: true,
      scope: 'openid email',
      client_id: app.clientId,
      username: 'alice',
      token_type: 'refresh_token',
      iat: tokens.created_at,
      sub: String(aliceId),
      aud: app.clientId,
      iss: ISSUER,
    });
  });

  it('{"active":false} for unknown, revoked, another application and a blocked user', async () => {
    const auth = { authorization: basic(app.clientId, app.secret) };
    expect((await introspect({ token: 'nope' }, auth)).json()).toEqual({ active: false });
    const other = await makeApp(f.db, { name: 'Other', scopes: 'openid' });
    const othersToken = (await exchange(await obtainCodeWith({ scope: 'openid' }, other), other)).json().access_token;
    expect((await introspect({ token: othersToken }, auth)).json()).toEqual({ active: false });
    const mine = (await exchange(await obtainCodeWith({ scope: 'openid' }))).json().access_token;
    expect((await introspect({ token: mine }, auth)).json().active).toBe(true);
    await setUserState(f.db, 'alice', 'blocked');
    expect((await introspect({ token: mine }, auth)).json()).toEqual({ active: false });
    await setUserState(f.db, 'alice', 'active');
    await post('/oauth/revoke', { token: mine }, auth);
    expect((await introspect({ token: mine }, auth)).json()).toEqual({ active: false });
  });

  it('without client credentials → 401 invalid_client; a public client_id alone is no credential', async () => {
    const none = await introspect({ token: 'x' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual(errorBody('invalid_client'));
    const pub = await makeApp(f.db, { name: 'Public', confidential: false, scopes: 'openid' });
    const publicOnly = await introspect({ token: 'x', client_id: pub.clientId });
    expect(publicOnly.statusCode).toBe(401);
    expect(publicOnly.json()).toEqual(errorBody('invalid_client'));
    const wrong = await introspect({ token: 'x' }, { authorization: basic(app.clientId, 'gloas-wrong') });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    expect(wrong.json()).toEqual(errorBody('invalid_client'));
    const missing = await introspect({}, { authorization: basic(app.clientId, app.secret) });
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toEqual(errorBody('invalid_request'));
  });
});

describe('/oauth/authorize: nonce, prompt, max_age and scopes', () => {
  const redirectOf = (res: { headers: Record<string, unknown> }) => new URL(res.headers.location as string);

  it('prompt=none without a session → login_required by redirect, with state', async () => {
    const anonymous = new WebClient(f.app);
    const res = await anonymous.get(`${authorizeUrl(app.clientId, { scope: 'openid', state: 's1' })}&prompt=none`);
    expect(res.statusCode).toBe(302);
    const back = redirectOf(res);
    expect(back.origin + back.pathname).toBe(REDIRECT_URI);
    expect(Object.fromEntries(back.searchParams)).toEqual({
      error: 'login_required',
      error_description: 'The authorization server requires end-user authentication.',
      state: 's1',
      iss: ISSUER,
    });
  });

  it('prompt=none signed in, consent needed → consent_required; a trusted app gets its code', async () => {
    const res = await web.get(`${authorizeUrl(app.clientId, { scope: 'openid', state: 's2' })}&prompt=none`);
    expect(Object.fromEntries(redirectOf(res).searchParams)).toEqual({
      error: 'consent_required',
      error_description: 'The authorization server requires end-user consent.',
      state: 's2',
      iss: ISSUER,
    });
    const trusted = await makeApp(f.db, { name: 'Trusted', scopes: 'openid', trusted: true });
    const ok = await web.get(`${authorizeUrl(trusted.clientId, { state: 's3' })}&prompt=none&nonce=abc`);
    const params = Object.fromEntries(redirectOf(ok).searchParams);
    expect(Object.keys(params).sort()).toEqual(['code', 'iss', 'state']);
    expect(params.iss).toBe(ISSUER);
    const { payload } = await verifyFor(trusted, (await exchange(params.code, trusted)).json().id_token);
    expect(payload.nonce).toBe('abc');
  });

  it('prompt=consent shows the consent page even to a trusted app', async () => {
    const trusted = await makeApp(f.db, { name: 'Trusted', scopes: 'openid', trusted: true });
    const res = await web.get(`${authorizeUrl(trusted.clientId)}&prompt=consent`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<strong>Trusted</strong> is requesting access to your account.');
    expect(res.body).toContain('<li data-scope="openid">Confirm who you are (your Lanyard account)</li>');
    expect(res.body).not.toContain('GitLab');
  });

  it('prompt=login and max_age=0 force a fresh sign-in, then come back without them; auth_time is the new sign-in', async () => {
    for (const extra of ['prompt=login', 'max_age=0']) {
      const url = `${authorizeUrl(app.clientId, { scope: 'openid', state: 's4' })}&nonce=n4&${extra}`;
      const first = await web.get(url);
      expect(first.statusCode).toBe(302);
      expect(first.headers.location).toBe('/users/sign_in');
      const form = await web.get('/users/sign_in');
      expect(form.statusCode).toBe(200);
      expect(form.body).toContain('name="user[password]"');
      const beforeSignIn = Math.floor(Date.now() / 1000);
      const signedIn = await web.post('/users/sign_in', {
        authenticity_token: WebClient.csrf(form.body),
        'user[login]': 'alice',
        'user[password]': PASSWORD,
      });
      expect(signedIn.statusCode).toBe(302);
      expect(signedIn.headers.location).toBe(
        `${authorizeUrl(app.clientId, { scope: 'openid', state: 's4' })}&nonce=n4`,
      );
      const consent = await web.get(signedIn.headers.location as string);
      let back = consent;
      if (extra === 'prompt=login') {
        // No grant yet: the consent page.
        expect(consent.statusCode).toBe(200);
        back = await web.post('/oauth/authorize', { ...consentFields(consent.body), decision: 'authorize' });
      } else {
        // A fresh sign-in is not fresh consent (contract §2): the confidential app's live grant from
        // the first round covers openid, so the code comes straight back.
        expect(consent.statusCode).toBe(302);
      }
      const code = redirectOf(back).searchParams.get('code')!;
      const { payload } = await verify((await exchange(code)).json().id_token, 'n4');
      expect(payload.auth_time).toBeGreaterThanOrEqual(beforeSignIn);
    }
  });

  it('a recent enough sign-in satisfies max_age: straight to the consent page', async () => {
    const res = await web.get(`${authorizeUrl(app.clientId, { scope: 'openid' })}&max_age=3600`);
    expect(res.statusCode).toBe(200);
  });

  it('bad input: openid not registered → invalid_scope; bad prompt, max_age or nonce → invalid_request', async () => {
    const apiOnly = await makeApp(f.db, { name: 'API only', scopes: 'read_user' });
    const cases: Array<[string, string]> = [
      [`${authorizeUrl(apiOnly.clientId, { scope: 'openid', state: 'x' })}`, 'invalid_scope'],
      [`${authorizeUrl(app.clientId, { scope: 'openid', state: 'x' })}&prompt=none%20login`, 'invalid_request'],
      [`${authorizeUrl(app.clientId, { scope: 'openid', state: 'x' })}&prompt=select_account`, 'invalid_request'],
      [`${authorizeUrl(app.clientId, { scope: 'openid', state: 'x' })}&max_age=-1`, 'invalid_request'],
      [`${authorizeUrl(app.clientId, { scope: 'openid', state: 'x' })}&max_age=soon`, 'invalid_request'],
      [`${authorizeUrl(app.clientId, { scope: 'openid', state: 'x' })}&nonce=${'n'.repeat(1025)}`, 'invalid_request'],
    ];
    for (const [url, error] of cases) {
      const res = await web.get(url);
      expect(res.statusCode).toBe(302);
      expect(Object.fromEntries(redirectOf(res).searchParams)).toEqual({
        ...errorBody(error as 'invalid_scope'),
        state: 'x',
        iss: ISSUER,
      });
    }
    expect(await f.db.selectFrom('oauth_authorization_codes').select('id').execute()).toEqual([]);
  });
});

async function verifyFor(client: Awaited<ReturnType<typeof makeApp>>, idToken: string) {
  expect(decodeProtectedHeader(idToken).alg).toBe('RS256');
  return jwtVerify(idToken, createLocalJWKSet(await jwks()), { issuer: ISSUER, audience: client.clientId });
}

/** The consent page with extra OpenID parameters, approved. */
async function obtainCodeWith(o: { scope: string; nonce?: string }, client = app): Promise<string> {
  if (o.nonce === undefined) return obtainCode(web, client.clientId, { scope: o.scope });
  const page = await web.get(
    `${authorizeUrl(client.clientId, { scope: o.scope })}&nonce=${encodeURIComponent(o.nonce)}`,
  );
  expect(page.statusCode).toBe(200);
  const fields = consentFields(page.body);
  expect(fields.nonce).toBe(o.nonce);
  const res = await web.post('/oauth/authorize', { ...fields, decision: 'authorize' });
  return new URL(res.headers.location as string).searchParams.get('code')!;
}
