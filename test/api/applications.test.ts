// The Applications API (GitLab's, administrators only, plus PUT beyond GitLab) through the real
// app: exact statuses and bodies, the secret once and hashed at rest, GitLab's field errors, the
// same audit trail as the CLI and the pages, and nothing written by a refused request.
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db, User } from '../../service/db/schema';
import { registerApplication } from '../../service/domain/applications';
import { makeOAuthToken, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase, resetDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let admin: User;
let adminToken: string;
let aliceToken: string;

function call(token: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) {
  return app.inject({
    method,
    url: `/api/v4${url}`,
    headers: { 'private-token': token, ...(payload ? { 'content-type': 'application/json' } : {}) },
    payload: payload === undefined ? undefined : JSON.stringify(payload),
  });
}

async function snapshot() {
  const apps = await db
    .selectFrom('oauth_applications')
    .select(['id', 'uid', 'name', 'secret_digest', 'scopes'])
    .orderBy('id')
    .execute();
  const audits = await db
    .selectFrom('audit_events')
    .select(['actor', 'action', 'target_id', 'details'])
    .where('target_type', '=', 'application')
    .orderBy('id')
    .execute();
  return { apps, audits };
}

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
});

beforeEach(async () => {
  await resetDatabase(db);
  admin = await makeUser(db, 'root', { admin: true });
  adminToken = await makePat(db, admin, ['api']);
  aliceToken = await makePat(db, await makeUser(db, 'alice'), ['api']);
});

const APP = { name: 'MyApplication', redirect_uri: 'https://redirect.example/cb', scopes: 'api read_user' };

describe('POST /api/v4/applications', () => {
  it("201 with GitLab's body and the secret, once; hashed at rest; audited as the CLI and pages are", async () => {
    const res = await call(adminToken, 'POST', '/applications', APP);
    expect(res.statusCode).toBe(201);
    expect(res.headers['content-type']).toBe('application/json');
    const body = res.json();
    expect(Object.keys(body)).toEqual([
      'id',
      'application_id',
      'application_name',
      'callback_url',
      'confidential',
      'scopes',
      'post_logout_redirect_uris',
      'backchannel_logout_uri',
      'backchannel_logout_session_required',
      'secret',
    ]);
    expect(body).toEqual({
      id: expect.any(Number),
      application_id: expect.stringMatching(/^[0-9a-f]{64}$/),
      application_name: 'MyApplication',
      callback_url: 'https://redirect.example/cb',
      confidential: true,
      scopes: ['api', 'read_user'],
      post_logout_redirect_uris: [],
      backchannel_logout_uri: null,
      backchannel_logout_session_required: false,
      secret: expect.stringMatching(/^gloas-[0-9a-f]{64}$/),
    });
    const { apps, audits } = await snapshot();
    expect(apps).toHaveLength(1);
    expect(apps[0].uid).toBe(body.application_id);
    expect(apps[0].secret_digest).not.toContain(body.secret);
    expect(
      JSON.stringify(
        await db.selectFrom('oauth_applications').select(sql`row_to_json(oauth_applications)`.as('r')).execute(),
      ),
    ).not.toContain(body.secret);
    expect(audits).toEqual([
      {
        actor: 'user:root',
        action: 'application.register',
        target_id: body.application_id,
        details: {
          name: 'MyApplication',
          redirect_uris: ['https://redirect.example/cb'],
          post_logout_redirect_uris: [],
          backchannel_logout_uri: null,
          backchannel_logout_session_required: false,
          scopes: ['api', 'read_user'],
          confidential: true,
          trusted: false,
        },
      },
    ]);
    // The secret works at the token endpoint (client_credentials), and is never listed.
    const token = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: body.application_id,
        client_secret: body.secret,
      }).toString(),
    });
    expect(token.statusCode).toBe(200);
    expect((await call(adminToken, 'GET', '/applications')).body).not.toContain(body.secret);
  });

  it('form parameters, several redirect URIs, confidential=false', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v4/applications',
      headers: { 'private-token': adminToken, 'content-type': 'application/x-www-form-urlencoded' },
      payload:
        'name=CLI&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb+https%3A%2F%2Fa.example%2Fcb&scopes=read_api+openid&confidential=false',
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      application_name: 'CLI',
      callback_url: 'http://127.0.0.1/cb\nhttps://a.example/cb',
      confidential: false,
      scopes: ['openid', 'read_api'],
    });
  });

  it("400 with GitLab's messages for missing parameters, bad redirect URIs, bad scopes, a bad name; nothing written", async () => {
    const before = await snapshot();
    const cases: Array<[unknown, unknown]> = [
      [{}, { error: 'name is missing, redirect_uri is missing, scopes is missing' }],
      [{ name: 'x', redirect_uri: 'https://a.example' }, { error: 'scopes is missing' }],
      [{ ...APP, scopes: '' }, { error: 'scopes is empty' }],
      [
        { ...APP, scopes: 'api write_repository' },
        { message: { scopes: ["doesn't match those configured on the server."] } },
      ],
      [{ ...APP, redirect_uri: 'not a uri' }, { message: { redirect_uri: ['must be an absolute URI.'] } }],
      [{ ...APP, redirect_uri: '/relative' }, { message: { redirect_uri: ['must be an absolute URI.'] } }],
      [
        { ...APP, redirect_uri: 'https://a.example/cb#frag' },
        { message: { redirect_uri: ['cannot contain a fragment.'] } },
      ],
      [{ ...APP, redirect_uri: 'javascript:alert(1)' }, { message: { redirect_uri: ['is forbidden by the server.'] } }],
      [{ ...APP, name: '   ' }, { message: { name: ["can't be blank"] } }],
      [{ ...APP, name: 'n'.repeat(256) }, { message: { name: ['is too long (maximum is 255 characters)'] } }],
      [{ ...APP, confidential: 'maybe' }, { error: 'confidential is invalid' }],
    ];
    for (const [payload, expected] of cases) {
      const res = await call(adminToken, 'POST', '/applications', payload);
      expect({ payload, status: res.statusCode, body: res.json() }).toEqual({ payload, status: 400, body: expected });
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe('who may use it', () => {
  it('403 for a non-administrator on every route, 401 without a token, 403 insufficient_scope for read_api writes; nothing written', async () => {
    const { application } = await registerApplication(db, { name: 'Existing', redirectUris: ['https://e.example'] });
    const before = await snapshot();
    for (const [method, url] of [
      ['POST', '/applications'],
      ['GET', '/applications'],
      ['PUT', `/applications/${application.id}`],
      ['DELETE', `/applications/${application.id}`],
      ['POST', `/applications/${application.id}/renew-secret`],
    ] as const) {
      const res = await call(aliceToken, method, url, method === 'GET' || method === 'DELETE' ? undefined : APP);
      expect({ method, url, status: res.statusCode, body: res.json() }).toEqual({
        method,
        url,
        status: 403,
        body: { message: '403 Forbidden' },
      });
      const anonymous = await app.inject({ method, url: `/api/v4${url}` });
      expect({ status: anonymous.statusCode, body: anonymous.json() }).toEqual({
        status: 401,
        body: { message: '401 Unauthorized' },
      });
    }
    const readOnly = await makeOAuthToken(db, admin, ['read_api']);
    const res = await app.inject({
      method: 'POST',
      url: '/api/v4/applications',
      headers: { authorization: `Bearer ${readOnly}`, 'content-type': 'application/json' },
      payload: JSON.stringify(APP),
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ error: 'insufficient_scope', scope: 'api' });
    expect(
      (await app.inject({ url: '/api/v4/applications', headers: { authorization: `Bearer ${readOnly}` } })).statusCode,
    ).toBe(200);
    expect(await snapshot()).toEqual(before);
  });
});

describe('GET, PUT, DELETE, renew-secret', () => {
  it('lists instance-wide applications without secrets (not the ones users own on their pages)', async () => {
    const created = (await call(adminToken, 'POST', '/applications', APP)).json();
    await registerApplication(db, { name: 'Mine', redirectUris: ['https://m.example'], ownerId: admin.id });
    const res = await call(adminToken, 'GET', '/applications');
    expect(res.statusCode).toBe(200);
    const { secret: _secret, ...listed } = created;
    expect(res.json()).toEqual([listed]);
  });

  it('PUT changes name, redirect URIs, scopes and confidential in place: same id, App ID and secret; audited', async () => {
    const created = (await call(adminToken, 'POST', '/applications', APP)).json();
    const res = await call(adminToken, 'PUT', `/applications/${created.id}`, {
      name: 'Renamed',
      redirect_uri: 'https://new.example/cb https://other.example/cb',
      scopes: 'read_api notify',
      confidential: false,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: created.id,
      application_id: created.application_id,
      application_name: 'Renamed',
      callback_url: 'https://new.example/cb\nhttps://other.example/cb',
      confidential: false,
      scopes: ['read_api', 'notify'],
      post_logout_redirect_uris: [],
      backchannel_logout_uri: null,
      backchannel_logout_session_required: false,
    });
    // A partial update touches only what it names.
    const partial = await call(adminToken, 'PUT', `/applications/${created.id}`, { name: 'Again' });
    expect(partial.json()).toMatchObject({
      application_name: 'Again',
      scopes: ['read_api', 'notify'],
      confidential: false,
    });
    const { audits, apps } = await snapshot();
    expect(audits.slice(1)).toEqual([
      {
        actor: 'user:root',
        action: 'application.update',
        target_id: created.application_id,
        details: {
          name: 'Renamed',
          redirect_uris: ['https://new.example/cb', 'https://other.example/cb'],
          scopes: ['read_api', 'notify'],
          confidential: false,
        },
      },
      {
        actor: 'user:root',
        action: 'application.update',
        target_id: created.application_id,
        details: { name: 'Again' },
      },
    ]);
    // The secret is the same one.
    const basic = Buffer.from(`${created.application_id}:${created.secret}`).toString('base64');
    const token = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
      payload: 'grant_type=client_credentials',
    });
    expect(token.statusCode).toBe(400); // now public: unauthorized_client, which proves the secret still authenticates
    expect(token.json().error).toBe('unauthorized_client');
    expect(apps).toHaveLength(1);
  });

  it('PUT refuses bad input with the same errors as POST, changing nothing', async () => {
    const created = (await call(adminToken, 'POST', '/applications', APP)).json();
    const before = await snapshot();
    for (const [payload, expected] of [
      [{ scopes: '' }, { error: 'scopes is empty' }],
      [{ name: 'ok', scopes: 'nope' }, { message: { scopes: ["doesn't match those configured on the server."] } }],
      [
        { name: 'ok', redirect_uri: 'https://x.example/#f' },
        { message: { redirect_uri: ['cannot contain a fragment.'] } },
      ],
    ] as const) {
      const res = await call(adminToken, 'PUT', `/applications/${created.id}`, payload);
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: expected });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('renew-secret: 201 with a new secret; the old one stops working at once; audited', async () => {
    const created = (await call(adminToken, 'POST', '/applications', APP)).json();
    const res = await call(adminToken, 'POST', `/applications/${created.id}/renew-secret`);
    expect(res.statusCode).toBe(201);
    const renewed = res.json();
    const { secret: oldSecret, ...same } = created;
    expect(renewed).toEqual({ ...same, secret: expect.any(String) });
    expect(renewed.secret).not.toBe(oldSecret);
    const grant = (secret: string) =>
      app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: created.application_id,
          client_secret: secret,
        }).toString(),
      });
    expect((await grant(oldSecret)).statusCode).toBe(401);
    expect((await grant(renewed.secret)).statusCode).toBe(200);
    expect((await snapshot()).audits.map((a) => a.action)).toEqual([
      'application.register',
      'application.rotate_secret',
    ]);
  });

  it('DELETE: 204 with no body, tokens gone with it, audited; then 404 Application Not Found everywhere', async () => {
    const created = (await call(adminToken, 'POST', '/applications', { ...APP, scopes: 'notify' })).json();
    const issued = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: created.application_id,
        client_secret: created.secret,
      }).toString(),
    });
    const info = () =>
      app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${issued.json().access_token}` } });
    expect((await info()).statusCode).toBe(200);
    const res = await call(adminToken, 'DELETE', `/applications/${created.id}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await info()).statusCode).toBe(401);
    expect((await snapshot()).apps).toEqual([]);
    expect((await snapshot()).audits.map((a) => a.action)).toEqual(['application.register', 'application.delete']);
    for (const [method, url] of [
      ['DELETE', `/applications/${created.id}`],
      ['PUT', `/applications/${created.id}`],
      ['POST', `/applications/${created.id}/renew-secret`],
      ['DELETE', '/applications/999999'],
    ] as const) {
      const r = await call(adminToken, method, url, method === 'PUT' ? { name: 'x' } : undefined);
      expect({ url, status: r.statusCode, body: r.json() }).toEqual({
        url,
        status: 404,
        body: { message: '404 Application Not Found' },
      });
    }
  });

  it("a user's own application (owned, from the pages) is not the Applications API's: 404, untouched", async () => {
    const { application } = await registerApplication(db, {
      name: 'Mine',
      redirectUris: ['https://m.example'],
      ownerId: admin.id,
    });
    const before = await snapshot();
    expect((await call(adminToken, 'DELETE', `/applications/${application.id}`)).statusCode).toBe(404);
    expect((await call(adminToken, 'PUT', `/applications/${application.id}`, { name: 'x' })).statusCode).toBe(404);
    expect(await snapshot()).toEqual(before);
  });

  it('an empty body sent as application/json is no body (python-gitlab on DELETE and renew-secret); bad JSON is 400', async () => {
    const created = (await call(adminToken, 'POST', '/applications', APP)).json();
    const empty = (method: 'POST' | 'DELETE', url: string, payload = '') =>
      app.inject({
        method,
        url: `/api/v4${url}`,
        headers: { 'private-token': adminToken, 'content-type': 'application/json' },
        payload,
      });
    expect((await empty('POST', `/applications/${created.id}/renew-secret`)).statusCode).toBe(201);
    const bad = await empty('POST', '/applications', '{"name":');
    expect(bad.statusCode).toBe(400);
    const poisoned = await empty('POST', '/applications', '{"__proto__":{"x":1},"name":"p"}');
    expect(poisoned.statusCode).toBe(400);
    expect((await empty('DELETE', `/applications/${created.id}`)).statusCode).toBe(204);
  });

  it('a non-numeric id: 400 id is invalid', async () => {
    const res = await call(adminToken, 'DELETE', '/applications/abc');
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: { error: 'id is invalid' } });
  });

  it('dpop_bound_access_tokens (RFC 9449 §5.2): set on create and update, shown only when set; a bad value changes nothing', async () => {
    const created = await call(adminToken, 'POST', '/applications', { ...APP, dpop_bound_access_tokens: 'true' });
    expect(created.statusCode).toBe(201);
    expect(created.json().dpop_bound_access_tokens).toBe(true);
    const row = () =>
      db
        .selectFrom('oauth_applications')
        .select('dpop_bound_access_tokens')
        .where('id', '=', created.json().id)
        .executeTakeFirstOrThrow();
    expect(await row()).toEqual({ dpop_bound_access_tokens: true });
    const before = await snapshot();
    const bad = await call(adminToken, 'PUT', `/applications/${created.json().id}`, {
      dpop_bound_access_tokens: 'maybe',
    });
    expect({ status: bad.statusCode, body: bad.json() }).toEqual({
      status: 400,
      body: { error: 'dpop_bound_access_tokens is invalid' },
    });
    expect(await snapshot()).toEqual(before);
    const off = await call(adminToken, 'PUT', `/applications/${created.json().id}`, {
      dpop_bound_access_tokens: false,
    });
    expect(off.statusCode).toBe(200);
    // Off: the entity without the member (GitLab's, and the logout fields every application has).
    expect(Object.keys(off.json())).toEqual([
      'id',
      'application_id',
      'application_name',
      'callback_url',
      'confidential',
      'scopes',
      'post_logout_redirect_uris',
      'backchannel_logout_uri',
      'backchannel_logout_session_required',
    ]);
    expect(await row()).toEqual({ dpop_bound_access_tokens: false });
  });
});

describe('logout fields (beyond GitLab): post_logout_redirect_uris, backchannel_logout_uri, …_session_required', () => {
  it('POST stores them; GET lists them; PUT changes and clears them', async () => {
    const res = await call(adminToken, 'POST', '/applications', {
      ...APP,
      post_logout_redirect_uris: 'https://rp.example/bye https://rp.example/again',
      backchannel_logout_uri: 'https://rp.example/backchannel',
      backchannel_logout_session_required: 'true',
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      post_logout_redirect_uris: ['https://rp.example/bye', 'https://rp.example/again'],
      backchannel_logout_uri: 'https://rp.example/backchannel',
      backchannel_logout_session_required: true,
    });
    const id = res.json().id;
    const listed = (await call(adminToken, 'GET', '/applications')).json();
    expect(listed[0]).toMatchObject({
      post_logout_redirect_uris: ['https://rp.example/bye', 'https://rp.example/again'],
      backchannel_logout_uri: 'https://rp.example/backchannel',
      backchannel_logout_session_required: true,
    });
    const changed = await call(adminToken, 'PUT', `/applications/${id}`, {
      post_logout_redirect_uris: ['http://127.0.0.1:9000/out'],
      backchannel_logout_uri: 'http://127.0.0.1:9000/bcl?x=1',
      backchannel_logout_session_required: false,
    });
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toMatchObject({
      post_logout_redirect_uris: ['http://127.0.0.1:9000/out'],
      backchannel_logout_uri: 'http://127.0.0.1:9000/bcl?x=1',
      backchannel_logout_session_required: false,
    });
    const cleared = await call(adminToken, 'PUT', `/applications/${id}`, {
      post_logout_redirect_uris: '',
      backchannel_logout_uri: '',
    });
    expect(cleared.json()).toMatchObject({ post_logout_redirect_uris: [], backchannel_logout_uri: null });
    const row = await db
      .selectFrom('oauth_applications')
      .select(['post_logout_redirect_uris', 'backchannel_logout_uri', 'backchannel_logout_session_required'])
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      post_logout_redirect_uris: [],
      backchannel_logout_uri: null,
      backchannel_logout_session_required: false,
    });
  });

  it('invalid URIs and flags: 400 naming the field; nothing stored (POST and PUT)', async () => {
    const created = (await call(adminToken, 'POST', '/applications', APP)).json();
    const before = await snapshot();
    const cases = [
      [
        { backchannel_logout_uri: 'https://rp.example/bcl#frag' },
        { message: { backchannel_logout_uri: ['cannot contain a fragment.'] } },
      ],
      [{ backchannel_logout_uri: '/relative' }, { message: { backchannel_logout_uri: ['must be an absolute URI.'] } }],
      [
        { backchannel_logout_uri: 'javascript:alert(1)' },
        { message: { backchannel_logout_uri: ['is forbidden by the server.'] } },
      ],
      [
        { backchannel_logout_uri: 'ftp://rp.example/bcl' },
        { message: { backchannel_logout_uri: ['must be a valid URI.'] } },
      ],
      [{ backchannel_logout_uri: ['https://a.example'] }, { error: 'backchannel_logout_uri is invalid' }],
      [{ backchannel_logout_session_required: 'maybe' }, { error: 'backchannel_logout_session_required is invalid' }],
      [
        { post_logout_redirect_uris: 'https://rp.example/bye#x' },
        { message: { post_logout_redirect_uri: ['cannot contain a fragment.'] } },
      ],
      [
        { post_logout_redirect_uris: 'data:text/html,hi' },
        { message: { post_logout_redirect_uri: ['is forbidden by the server.'] } },
      ],
      [
        { post_logout_redirect_uris: ['ok.example/x'] },
        { message: { post_logout_redirect_uri: ['must be an absolute URI.'] } },
      ],
    ] as const;
    for (const [fields, expected] of cases) {
      const post = await call(adminToken, 'POST', '/applications', { ...APP, ...fields });
      expect({ fields, status: post.statusCode, body: post.json() }).toEqual({ fields, status: 400, body: expected });
      const put = await call(adminToken, 'PUT', `/applications/${created.id}`, fields);
      expect({ fields, status: put.statusCode, body: put.json() }).toEqual({ fields, status: 400, body: expected });
    }
    expect(await snapshot()).toEqual(before);
    const row = await db
      .selectFrom('oauth_applications')
      .select(['post_logout_redirect_uris', 'backchannel_logout_uri'])
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ post_logout_redirect_uris: [], backchannel_logout_uri: null });
  });
});
