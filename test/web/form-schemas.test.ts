// The web forms' body schemas (service/http/form-body.ts): undeclared fields are dropped, a
// single-valued field sent twice is a 400 HTML page (issue 11: scalars only where the form says
// scalar), and any other misfit gets the route's own HTML answer, never Fastify's 400 JSON.
import { beforeEach, describe, expect, it } from 'vitest';
import { resetDatabase } from '../support/db';
import { authorizeUrl, consentFields, WebClient } from '../oauth/support/browser-like';
import { DESCRIPTIONS } from '../oauth/support/contract';
import { FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from '../oauth/support/harness';

const f = useFixture();
const F = 'doorkeeper_application';
let web: WebClient;

beforeEach(async () => {
  await resetDatabase(f.db);
  await makeUser(f.db, 'alice');
  web = new WebClient(f.app);
});

const html = (res: { statusCode: number; headers: Record<string, unknown> }, status: number) => {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
};

describe('sign-in and sign-out', () => {
  it('a repeated authenticity_token is the 400 page', async () => {
    const token = WebClient.csrf((await web.get('/users/sign_in')).body);
    const res = await web.postRaw(
      '/users/sign_in',
      new URLSearchParams([
        ['authenticity_token', token],
        ['authenticity_token', token],
        ['user[login]', 'alice'],
        ['user[password]', PASSWORD],
      ]).toString(),
    );
    html(res, 400);
    expect(res.body).toContain('A field of this form was sent more than once.');
  });

  it('a repeated login is the 400 page, not a sign-in attempt (no failure counted)', async () => {
    const token = WebClient.csrf((await web.get('/users/sign_in')).body);
    const res = await web.postRaw(
      '/users/sign_in',
      new URLSearchParams([
        ['authenticity_token', token],
        ['user[login]', 'alice'],
        ['user[login]', 'bob'],
        ['user[password]', PASSWORD],
      ]).toString(),
    );
    html(res, 400);
    expect(res.body).toContain('A field of this form was sent more than once.');
    const row = await f.db.selectFrom('users').select('failed_attempts').executeTakeFirstOrThrow();
    expect(row.failed_attempts).toBe(0);
  });

  it('undeclared fields are ignored: the sign-in still succeeds', async () => {
    const token = WebClient.csrf((await web.get('/users/sign_in')).body);
    const res = await web.post('/users/sign_in', {
      authenticity_token: token,
      'user[login]': 'alice',
      'user[password]': PASSWORD,
      'user[remember_me]': '1',
      commit: 'Sign in',
    });
    expect(res.statusCode).toBe(302);
  });

  it('sign-out with an empty body, or a JSON array, is the 422 page', async () => {
    await web.signIn('alice', PASSWORD);
    html(await f.app.inject({ method: 'POST', url: '/users/sign_out', headers: { cookie: web.cookieHeader } }), 422);
    html(
      await f.app.inject({
        method: 'POST',
        url: '/users/sign_out',
        headers: { cookie: web.cookieHeader },
        payload: ['authenticity_token'],
      }),
      422,
    );
    expect((await web.get('/profile/applications')).statusCode).toBe(200);
  });
});

describe('/profile/applications', () => {
  beforeEach(async () => {
    await web.signIn('alice', PASSWORD);
  });

  it('a single scope checkbox arrives as an array; an undeclared field (trusted) is dropped', async () => {
    const token = WebClient.csrf((await web.get('/profile/applications')).body);
    const res = await web.post('/profile/applications', {
      authenticity_token: token,
      [`${F}[name]`]: 'One scope',
      [`${F}[redirect_uri]`]: 'https://a.example/cb',
      [`${F}[scopes][]`]: 'read_user',
      [`${F}[trusted]`]: '1',
    });
    expect(res.statusCode).toBe(303);
    const row = await f.db
      .selectFrom('oauth_applications')
      .select(['scopes', 'trusted', 'confidential'])
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ scopes: ['read_user'], trusted: false, confidential: false });
  });

  it('a repeated name is the 400 page; nothing is created', async () => {
    const token = WebClient.csrf((await web.get('/profile/applications')).body);
    const res = await web.postRaw(
      '/profile/applications',
      new URLSearchParams([
        ['authenticity_token', token],
        [`${F}[name]`, 'A'],
        [`${F}[name]`, 'B'],
        [`${F}[redirect_uri]`, 'https://a.example/cb'],
        [`${F}[scopes][]`, 'api'],
      ]).toString(),
    );
    html(res, 400);
    expect(await f.db.selectFrom('oauth_applications').select('id').execute()).toEqual([]);
  });

  it('a malformed application id in the path is still the 400 it was', async () => {
    const token = WebClient.csrf((await web.get('/profile/applications')).body);
    const res = await web.post('/profile/applications/not-an-id/delete', { authenticity_token: token });
    // A browser never gets JSON: the 400 page, naming the parameter.
    html(res, 400);
    expect(res.body).toContain('<h1>Bad request</h1>');
    expect(res.body).toContain('Lanyard could not read this request: id is invalid.');
  });
});

describe('the consent form (POST /oauth/authorize)', () => {
  it('a parameter sent twice is still invalid_request back to the client; a repeated token the 422 page', async () => {
    const c = await makeApp(f.db);
    await web.signIn('alice', PASSWORD);
    const fields = consentFields((await web.get(authorizeUrl(c.clientId, { state: 's' }))).body);
    const twice = await web.postRaw(
      '/oauth/authorize',
      new URLSearchParams([...Object.entries(fields), ['scope', 'api'], ['decision', 'authorize']]).toString(),
    );
    expect(twice.statusCode).toBe(302);
    expect(twice.headers.location).toBe(
      `${REDIRECT_URI}?${new URLSearchParams({ error: 'invalid_request', error_description: DESCRIPTIONS.invalid_request, state: 's', iss: 'http://127.0.0.1:3000' })}`,
    );
    const csrfTwice = await f.app.inject({
      method: 'POST',
      url: '/oauth/authorize',
      headers: { ...FORM, cookie: web.cookieHeader },
      payload: new URLSearchParams([
        ...Object.entries(fields),
        ['authenticity_token', fields.authenticity_token],
        ['decision', 'authorize'],
      ]).toString(),
    });
    html(csrfTwice, 422);
    expect(await f.db.selectFrom('oauth_authorization_codes').select('id').execute()).toEqual([]);
  });
});
