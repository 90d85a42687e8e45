// Regression (issue 11, "level[]=custom is accepted as custom"): on /oauth/* a parameter the
// contract defines as one value, sent repeated, as a JSON array/object or in bracket form
// (`scope[]=read_user`, which used to read as "no scope" and so grant every scope of the
// application), is invalid_request 400, and nothing is issued. Web forms: see
// test/web/form-schemas.test.ts (a 400 page).
import { describe, expect, it } from 'vitest';
import { obtainCode, WebClient } from '../oauth/support/browser-like';
import { basic, FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from '../oauth/support/harness';

const f = useFixture();

const INVALID_REQUEST = {
  error: 'invalid_request',
  error_description:
    'The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed.',
};

describe('level[]=custom is accepted as custom', () => {
  it('/oauth/token: repeated, bracketed and JSON non-scalars are invalid_request; no token issued', async () => {
    await makeUser(f.db, 'alice');
    const c = await makeApp(f.db);
    const auth = { authorization: basic(c.clientId, c.secret) };
    const base = `grant_type=password&username=alice&password=${encodeURIComponent(PASSWORD)}`;
    const forms = [
      `${base}&scope[]=read_user`,
      `${base}&scope%5B%5D=read_user`,
      `${base}&scope[0]=read_user`,
      `${base}&scope=read_user&scope=api`,
      `${base}&grant_type=password`,
      `grant_type[]=password&username=alice&password=${encodeURIComponent(PASSWORD)}`,
      `${base}&username[]=bob`,
      `${base}&client_id=${c.clientId}&client_secret[]=${c.secret}`,
    ];
    for (const payload of forms) {
      const res = await f.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...auth }, payload });
      expect({ payload, status: res.statusCode, body: res.json() }).toEqual({
        payload,
        status: 400,
        body: INVALID_REQUEST,
      });
      expect(res.headers['cache-control']).toBe('no-store');
    }
    // In the query string too, and as JSON values.
    const query = await f.app.inject({ method: 'POST', url: `/oauth/token?${base}&scope[]=read_user`, headers: auth });
    expect({ status: query.statusCode, body: query.json() }).toEqual({ status: 400, body: INVALID_REQUEST });
    for (const scope of [['read_user'], { a: 'read_user' }]) {
      const res = await f.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: auth,
        payload: { grant_type: 'password', username: 'alice', password: PASSWORD, scope },
      });
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: INVALID_REQUEST });
    }
    expect(await f.db.selectFrom('oauth_access_tokens').select('id').execute()).toEqual([]);
    // The single value still works.
    const ok = await f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, ...auth },
      payload: `${base}&scope=read_user`,
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().scope).toBe('read_user');
  });

  it('/oauth/revoke: a bracketed token is invalid_request and revokes nothing', async () => {
    await makeUser(f.db, 'bob');
    const c = await makeApp(f.db, { name: 'Revoke' });
    const issued = (
      await f.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
        payload: `grant_type=password&username=bob&password=${encodeURIComponent(PASSWORD)}`,
      })
    ).json();
    const res = await f.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: `token[]=${issued.access_token}`,
    });
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: INVALID_REQUEST });
    const info = await f.app.inject({
      url: '/oauth/token/info',
      headers: { authorization: `Bearer ${issued.access_token}` },
    });
    expect(info.statusCode).toBe(200);
  });

  it('/oauth/authorize: scope[]= goes back to the client as invalid_request; client_id[]= is the error page', async () => {
    await makeUser(f.db, 'carol');
    const c = await makeApp(f.db, { name: 'Authorize' });
    const web = new WebClient(f.app);
    await web.signIn('carol', PASSWORD);
    const bracketed = await web.get(
      `/oauth/authorize?client_id=${c.clientId}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&response_type=code&state=s&scope[]=read_user`,
    );
    expect(bracketed.statusCode).toBe(302);
    expect(bracketed.headers.location).toBe(
      `${REDIRECT_URI}?${new URLSearchParams({ ...INVALID_REQUEST, state: 's', iss: 'http://127.0.0.1:3000' })}`,
    );
    const badClient = await web.get(
      `/oauth/authorize?client_id[]=${c.clientId}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&response_type=code`,
    );
    expect(badClient.statusCode).toBe(400);
    expect(badClient.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(badClient.headers.location).toBeUndefined();
    // The plain request still gets its code.
    expect(await obtainCode(web, c.clientId, { state: 's' })).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('non-scalar parameters on the device, introspection and userinfo endpoints', () => {
  it('/oauth/authorize_device: scope[x]= and scope[]= are invalid_request, no device grant created', async () => {
    const c = await makeApp(f.db, { name: 'Device CLI' });
    const auth = { authorization: basic(c.clientId, c.secret) };
    for (const payload of ['scope[x]=api', 'scope[]=api', 'scope=api&scope=read_user']) {
      const res = await f.app.inject({
        method: 'POST',
        url: '/oauth/authorize_device',
        headers: { ...FORM, ...auth },
        payload,
      });
      expect({ payload, status: res.statusCode, body: res.json() }).toEqual({
        payload,
        status: 400,
        body: INVALID_REQUEST,
      });
    }
    expect(await f.db.selectFrom('oauth_device_grants').select('id').execute()).toEqual([]);
  });

  it('/oauth/introspect: token[x]= is invalid_request', async () => {
    const c = await makeApp(f.db, { name: 'Resource server' });
    const res = await f.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: 'token[x]=abc',
    });
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: INVALID_REQUEST });
  });

  it('/oauth/userinfo: access_token[]= names no token (401 invalid_token)', async () => {
    const res = await f.app.inject({ method: 'GET', url: '/oauth/userinfo?access_token[]=abc' });
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 401,
      body: { error: 'invalid_token', error_description: 'The access token is invalid' },
    });
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="Doorkeeper", error="invalid_token", error_description="The access token is invalid"',
    );
    expect(res.headers['cache-control']).toBe('no-store');
  });
});
