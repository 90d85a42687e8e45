// grant_type=client_credentials (RFC 6749 §4.4) through the real app: an application's own token
// (no user, no refresh token), what /api/v4, token info, introspection and userinfo make of it,
// the application-only scope `notify` (refused on every user path, accepted by the recipients API
// in place of an administrator's token), and `offline_access` with `openid`.
import { beforeEach, describe, expect, it } from 'vitest';
import { createPersonalAccessToken } from '../../service/domain/personal-access-tokens';
import { resetDatabase } from '../support/db';
import { addMember, createGroup, createProject, makePat, makeUser as makeApiUser } from '../support/api-fixtures';
import { authorizeUrl, consentFields, obtainCode, WebClient } from './support/browser-like';
import { errorBody, type ErrorCode } from './support/contract';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const f = useFixture();

const post = (url: string, values: Record<string, string | undefined>, headers: Record<string, string> = {}) =>
  f.app.inject({ method: 'POST', url, headers: { ...FORM, ...headers }, payload: form(values) });
const token = (values: Record<string, string | undefined>, headers: Record<string, string> = {}) =>
  post('/oauth/token', values, headers);
const api = (url: string, accessToken: string, method: 'GET' | 'POST' = 'GET', payload?: unknown) =>
  f.app.inject({
    method,
    url: `/api/v4${url}`,
    headers: {
      authorization: `Bearer ${accessToken}`,
      ...(payload ? { 'content-type': 'application/json' } : {}),
    },
    payload: payload === undefined ? undefined : JSON.stringify(payload),
  });

function expectError(res: Awaited<ReturnType<typeof token>>, status: number, error: ErrorCode) {
  expect({ status: res.statusCode, body: res.json() }).toEqual({ status, body: errorBody(error) });
  expect(res.headers['cache-control']).toBe('no-store');
}

const tokenCount = async () =>
  Number(
    (
      await f.db
        .selectFrom('oauth_access_tokens')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

let ctx: Awaited<ReturnType<typeof setup>>;
async function setup() {
  await makeUser(f.db, 'alice');
  const service = await makeApp(f.db, { name: 'Notifier', scopes: 'api read_user openid notify' });
  const other = await makeApp(f.db, { name: 'Other', scopes: 'api' });
  const pub = await makeApp(f.db, { name: 'Public', confidential: false, scopes: 'api notify' });
  return { service, other, pub, auth: basic(service.clientId, service.secret) };
}

beforeEach(async () => {
  await resetDatabase(f.db);
  ctx = await setup();
});

async function applicationToken(scope?: string): Promise<string> {
  const res = await token({ grant_type: 'client_credentials', scope }, { authorization: ctx.auth });
  expect(res.statusCode).toBe(200);
  return res.json().access_token;
}

describe('POST /oauth/token grant_type=client_credentials', () => {
  it("issues the application's own token: no refresh token, no user; default scopes = the application's less openid", async () => {
    const res = await token({ grant_type: 'client_credentials' }, { authorization: ctx.auth });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const body = res.json();
    expect(Object.keys(body)).toEqual(['access_token', 'token_type', 'expires_in', 'scope', 'created_at']);
    expect(body).toEqual({
      access_token: expect.stringMatching(/^[0-9a-f]{64}$/),
      token_type: 'bearer',
      expires_in: 7200,
      scope: 'api read_user notify',
      created_at: expect.any(Number),
    });
    const rows = await f.db
      .selectFrom('oauth_access_tokens')
      .select(['application_id', 'user_id', 'refresh_token_digest', 'scopes'])
      .execute();
    expect(rows).toEqual([
      {
        application_id: ctx.service.application.id,
        user_id: null,
        refresh_token_digest: null,
        scopes: ['api', 'read_user', 'notify'],
      },
    ]);
  });

  it('client_secret_post and a narrower scope', async () => {
    const res = await token({
      grant_type: 'client_credentials',
      client_id: ctx.service.clientId,
      client_secret: ctx.service.secret,
      scope: 'notify',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('notify');
  });

  it('invalid_scope for a scope the application lacks, an unknown one, or openid; nothing written', async () => {
    for (const scope of ['read_api', 'api read_api', 'sudo', 'nope', 'openid', 'notify profile', 'offline_access']) {
      expectError(
        await token({ grant_type: 'client_credentials', scope }, { authorization: ctx.auth }),
        400,
        'invalid_scope',
      );
    }
    expect(await tokenCount()).toBe(0);
  });

  it('unauthorized_client for a public application (by client_id alone, or even with its secret); nothing written', async () => {
    expectError(
      await token({ grant_type: 'client_credentials', client_id: ctx.pub.clientId }),
      400,
      'unauthorized_client',
    );
    expectError(
      await token({ grant_type: 'client_credentials' }, { authorization: basic(ctx.pub.clientId, ctx.pub.secret) }),
      400,
      'unauthorized_client',
    );
    expect(await tokenCount()).toBe(0);
  });

  it('invalid_client without credentials or with a wrong secret (Basic: with the challenge)', async () => {
    expectError(await token({ grant_type: 'client_credentials' }), 401, 'invalid_client');
    const wrong = await token(
      { grant_type: 'client_credentials' },
      { authorization: basic(ctx.service.clientId, 'x') },
    );
    expectError(wrong, 401, 'invalid_client');
    expect(wrong.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    expect(await tokenCount()).toBe(0);
  });

  it('wrong secrets count against the client address: after 60 in a minute, 429 with Retry-After, even for the right one', async () => {
    const from = { remoteAddress: '203.0.113.9' };
    const attempt = (secret: string) =>
      f.app.inject({
        method: 'POST',
        url: '/oauth/token',
        ...from,
        headers: { ...FORM, authorization: basic(ctx.service.clientId, secret) },
        payload: form({ grant_type: 'client_credentials' }),
      });
    for (let i = 0; i < 60; i++) expect((await attempt(`wrong-${i}`)).statusCode).toBe(401);
    const blocked = await attempt(ctx.service.secret);
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(await tokenCount()).toBe(0);
  });
});

describe("what an application's own token reads", () => {
  it('/api/v4 endpoints that need a user: 401 as GitLab answers a token without one; scope and revocation checked first', async () => {
    const t = await applicationToken('api read_user');
    for (const url of ['/user', '/groups', '/notification_settings', '/version']) {
      const res = await api(url, t);
      expect({ url, status: res.statusCode, body: res.json() }).toEqual({
        url,
        status: 401,
        body: { message: '401 Unauthorized' },
      });
    }
    // Scope first (GitLab validates the token before it looks for its user).
    const notifyOnly = await applicationToken('notify');
    const res = await api('/user', notifyOnly);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({
      error: 'insufficient_scope',
      error_description: 'The request requires higher privileges than provided by the access token.',
      scope: 'api read_api read_user',
    });
    // Revoked: the revocation message, as for any token.
    expect((await post('/oauth/revoke', { token: t }, { authorization: ctx.auth })).statusCode).toBe(200);
    expect((await api('/user', t)).json()).toEqual({
      error: 'invalid_token',
      error_description: 'Token was revoked. You have to re-authorize from the user.',
    });
  });

  it('GET /oauth/token/info: no resource owner, its application and scopes', async () => {
    const t = await applicationToken('notify');
    const res = await f.app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${t}` } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      resource_owner_id: null,
      scope: ['notify'],
      expires_in: expect.any(Number),
      application: { uid: ctx.service.clientId },
      created_at: expect.any(Number),
      scopes: ['notify'],
      expires_in_seconds: expect.any(Number),
    });
    expect(body.expires_in).toBeGreaterThan(7190);
  });

  it('POST /oauth/introspect: active with client_id and scope, no sub or username; another application learns nothing', async () => {
    const t = await applicationToken('api notify');
    const res = await post('/oauth/introspect', { token: t }, { authorization: ctx.auth });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      active: true,
      scope: 'api notify',
      client_id: ctx.service.clientId,
      token_type: 'Bearer',
      exp: expect.any(Number),
      iat: expect.any(Number),
      aud: ctx.service.clientId,
      iss: f.config.publicUrl,
    });
    expect(body.exp - body.iat).toBe(7200);
    const other = await post(
      '/oauth/introspect',
      { token: t },
      { authorization: basic(ctx.other.clientId, ctx.other.secret) },
    );
    expect(other.json()).toEqual({ active: false });
  });

  it('GET /oauth/userinfo: 403 insufficient_scope (no openid, no user)', async () => {
    const t = await applicationToken();
    const res = await f.app.inject({ url: '/oauth/userinfo', headers: { authorization: `Bearer ${t}` } });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ error: 'insufficient_scope' });
  });
});

describe('the notify scope is for application tokens only', () => {
  it('authorize: asked for → invalid_scope to the redirect URI; not asked for → left out of what the user grants', async () => {
    const web = new WebClient(f.app);
    await web.signIn('alice', PASSWORD);
    const refused = await web.get(authorizeUrl(ctx.service.clientId, { scope: 'api notify', state: 's' }));
    expect(refused.statusCode).toBe(302);
    const location = new URL(refused.headers.location as string);
    expect(location.origin + location.pathname).toBe(REDIRECT_URI);
    expect(Object.fromEntries(location.searchParams)).toEqual({ ...errorBody('invalid_scope'), state: 's' });

    const page = await web.get(authorizeUrl(ctx.service.clientId, { state: 's' }));
    expect(page.statusCode).toBe(200);
    expect(consentFields(page.body).scope).toBe('openid api read_user');
    expect(page.body).not.toContain('notify');

    // An application holding only notify has nothing a user can grant.
    const only = await makeApp(f.db, { name: 'Only notify', scopes: 'notify' });
    const none = await web.get(authorizeUrl(only.clientId, { state: 'n' }));
    expect(new URL(none.headers.location as string).searchParams.get('error')).toBe('invalid_scope');
  });

  it('device authorization and the password grant: invalid_scope', async () => {
    expectError(
      await post('/oauth/authorize_device', { client_id: ctx.pub.clientId, scope: 'notify' }),
      400,
      'invalid_scope',
    );
    expectError(
      await token(
        { grant_type: 'password', username: 'alice', password: PASSWORD, scope: 'notify' },
        { authorization: ctx.auth },
      ),
      400,
      'invalid_scope',
    );
    // Without a scope the password grant gives what the user may grant, never notify.
    const res = await token(
      { grant_type: 'password', username: 'alice', password: PASSWORD },
      { authorization: ctx.auth },
    );
    expect(res.json().scope).toBe('openid api read_user');
    expect(await tokenCount()).toBe(1);
  });

  it('personal access tokens: refused', async () => {
    await expect(createPersonalAccessToken(f.db, { username: 'alice', name: 'n', scopes: 'notify' })).rejects.toThrow(
      'unknown scope: notify (choose from: api, read_api, read_user, sudo)',
    );
    expect(await f.db.selectFrom('personal_access_tokens').select('id').execute()).toEqual([]);
  });
});

describe('offline_access (OpenID Connect Core §11)', () => {
  it('accepted with openid, a no-op; without openid, invalid_scope', async () => {
    const web = new WebClient(f.app);
    await web.signIn('alice', PASSWORD);
    const code = await obtainCode(web, ctx.service.clientId, { scope: 'openid offline_access api' });
    const res = await token(
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
      { authorization: ctx.auth },
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      scope: 'openid api',
      refresh_token: expect.any(String),
      id_token: expect.any(String),
    });
    const refused = await web.get(authorizeUrl(ctx.service.clientId, { scope: 'api offline_access', state: 'o' }));
    expect(new URL(refused.headers.location as string).searchParams.get('error')).toBe('invalid_scope');
  });
});

describe('the recipients API takes a notify application token in place of an administrator', () => {
  it('same answer as an admin token; without notify 401; a user token without admin 403', async () => {
    const admin = await makeApiUser(f.db, 'root', { admin: true });
    const bob = await makeApiUser(f.db, 'bob');
    await createGroup(f.db, { path: 'acme', visibility: 'private' });
    const project = await createProject(f.db, { path: 'acme/api', visibility: 'private' });
    await addMember(f.db, { group: 'acme', username: 'bob', access: 'developer' });
    const group = await f.db.selectFrom('groups').select('id').executeTakeFirstOrThrow();
    await f.db
      .insertInto('notification_settings')
      .values({ user_id: bob.id, group_id: group.id, level: 'watch' })
      .execute();
    const request = { event: 'new_issue', participant_ids: [], mentioned_ids: [] };
    const url = `/projects/${project.id}/notification_recipients`;

    const asAdmin = await f.app.inject({
      method: 'POST',
      url: `/api/v4${url}`,
      headers: { 'private-token': await makePat(f.db, admin, ['api']), 'content-type': 'application/json' },
      payload: JSON.stringify(request),
    });
    expect(asAdmin.statusCode).toBe(200);
    const expected = {
      recipients: [
        {
          user_id: bob.id,
          username: 'bob',
          email: 'bob@example.com',
          reason: 'watching',
          level: 'watch',
          source: { type: 'group', id: group.id, full_path: 'acme' },
        },
      ],
    };
    expect(asAdmin.json()).toEqual(expected);

    const notify = await applicationToken('notify');
    const asApplication = await api(url, notify, 'POST', request);
    expect(asApplication.statusCode).toBe(200);
    expect(asApplication.json()).toEqual(expected);
    // By path too, and for groups.
    expect((await api('/projects/acme%2Fapi/notification_recipients', notify, 'POST', request)).json()).toEqual(
      expected,
    );
    expect((await api(`/groups/${group.id}/notification_recipients`, notify, 'POST', request)).statusCode).toBe(200);
    // An unknown project: 404, as for an administrator.
    expect((await api('/projects/999999/notification_recipients', notify, 'POST', request)).json()).toEqual({
      message: '404 Project Not Found',
    });

    // An application token without notify acts for no one: 401.
    const apiOnly = await applicationToken('api');
    expect((await api(url, apiOnly, 'POST', request)).json()).toEqual({ message: '401 Unauthorized' });
    // The caller's effective settings need a user: a notify token lacks the scope for them.
    expect((await api(`/projects/${project.id}/notification_settings/effective`, notify)).statusCode).toBe(403);
    // A user's token without admin: 403, as before.
    const asBob = await f.app.inject({
      method: 'POST',
      url: `/api/v4${url}`,
      headers: { 'private-token': await makePat(f.db, bob, ['api']), 'content-type': 'application/json' },
      payload: JSON.stringify(request),
    });
    expect({ status: asBob.statusCode, body: asBob.json() }).toEqual({
      status: 403,
      body: { message: '403 Forbidden' },
    });
  });
});
