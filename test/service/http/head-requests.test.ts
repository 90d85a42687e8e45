// HEAD answers what GET answers — status and headers, the length GET's body has, no body — on
// API, OAuth and page routes, signed in and out, without a HEAD route registered per GET route;
// a path without GET is a 404 (or the pages' 405 with Allow) as for any other method.
import { Writable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../../service/app';
import { loggerOptions } from '../../../service/http/logging';
import { makePat } from '../../support/api-fixtures';
import { testConfig } from '../../support/app';
import { WebClient } from '../../oauth/support/browser-like';
import { makeApp, makeUser, PASSWORD, useFixture } from '../../oauth/support/harness';

const f = useFixture({ config: { publicUrl: 'https://lanyard.example.com' } });

/** Headers that differ between any two requests (a fresh date, cookie values, request ids). */
const VARYING = new Set(['date', 'set-cookie']);

function comparable(res: LightMyRequestResponse) {
  const headers = Object.fromEntries(Object.entries(res.headers).filter(([name]) => !VARYING.has(name)));
  return { status: res.statusCode, headers };
}

const cookieNames = (res: LightMyRequestResponse) =>
  [res.headers['set-cookie'] ?? []].flat().map((c) => String(c).split('=')[0]);

async function expectHeadLikeGet(app: FastifyInstance, url: string, headers: Record<string, string> = {}) {
  const get = await app.inject({ method: 'GET', url, headers });
  const head = await app.inject({ method: 'HEAD', url, headers });
  expect(head.body, `HEAD ${url}`).toBe('');
  const expected = comparable(get);
  // The length of what GET sends, whether GET's answer has a body or not (a redirect: 0).
  expected.headers['content-length'] = String(get.rawPayload.length);
  expect(comparable(head), `HEAD ${url}`).toEqual(expected);
  return get;
}

describe('HEAD', () => {
  it('answers as GET on API routes: a user, an unknown token, a missing scope, an unknown route', async () => {
    const { user } = await makeUser(f.db, 'hannah');
    const pat = await makePat(f.db, user, ['read_user']);
    const me = await expectHeadLikeGet(f.app, '/api/v4/user', { 'private-token': pat });
    expect(me.statusCode).toBe(200);
    expect(me.headers['content-type']).toBe('application/json');
    expect((await expectHeadLikeGet(f.app, '/api/v4/user', { authorization: 'Bearer glpat-nope' })).statusCode).toBe(
      401,
    );
    // read_user allows GET and HEAD of /user only: the same 403 for both.
    const forbidden = await expectHeadLikeGet(f.app, '/api/v4/notification_settings', { 'private-token': pat });
    expect(forbidden.statusCode).toBe(403);
    const settings = await expectHeadLikeGet(f.app, '/api/v4/notification_settings', {
      'private-token': await makePat(f.db, user, ['read_api']),
    });
    expect(settings.statusCode).toBe(200);
    expect((await expectHeadLikeGet(f.app, `/api/v4/users/${user.id}`, { 'private-token': pat })).statusCode).toBe(200);
    expect((await expectHeadLikeGet(f.app, '/api/v4/nope')).statusCode).toBe(404);
    expect((await expectHeadLikeGet(f.app, '/api/v4/version?x=1', { 'private-token': pat })).statusCode).toBe(200);
  });

  it('answers as GET on OAuth routes: discovery, keys, the authorization page and its errors', async () => {
    const discovery = await expectHeadLikeGet(f.app, '/.well-known/openid-configuration');
    expect(discovery.statusCode).toBe(200);
    expect((await expectHeadLikeGet(f.app, '/oauth/discovery/keys')).statusCode).toBe(200);
    const c = await makeApp(f.db);
    const signedOut = await expectHeadLikeGet(
      f.app,
      `/oauth/authorize?client_id=${c.clientId}&redirect_uri=${encodeURIComponent('https://client.example/callback')}&response_type=code&scope=api`,
    );
    expect(signedOut.statusCode).toBe(302);
    const unknownClient = await expectHeadLikeGet(f.app, '/oauth/authorize?client_id=nope&response_type=code', {
      accept: 'text/html',
    });
    expect(unknownClient.statusCode).toBe(400);
    expect((await expectHeadLikeGet(f.app, '/oauth/userinfo')).statusCode).toBe(401);
  });

  it('answers as GET on pages, signed out and signed in, and on the assets', async () => {
    const signIn = await expectHeadLikeGet(f.app, '/users/sign_in', { accept: 'text/html' });
    expect(signIn.statusCode).toBe(200);
    expect(signIn.headers['content-type']).toBe('text/html; charset=utf-8');
    expect((await expectHeadLikeGet(f.app, '/-/profile', { accept: 'text/html' })).statusCode).toBe(302);
    // The handler sees HEAD: only a GET remembers where the visitor was going (a session cookie).
    const remembered = await f.app.inject({ method: 'GET', url: '/-/profile', headers: { accept: 'text/html' } });
    const notRemembered = await f.app.inject({ method: 'HEAD', url: '/-/profile', headers: { accept: 'text/html' } });
    expect({ get: cookieNames(remembered).length > 0, head: cookieNames(notRemembered) }).toEqual({
      get: true,
      head: [],
    });
    expect((await expectHeadLikeGet(f.app, '/', { accept: 'text/html' })).statusCode).toBe(302);
    expect((await expectHeadLikeGet(f.app, '/favicon.ico')).statusCode).toBe(200);
    const css = /href="(\/-\/assets\/lanyard-[0-9a-f]{16}\.css)"/.exec(signIn.body)?.[1];
    expect((await expectHeadLikeGet(f.app, css!)).statusCode).toBe(200);

    await makeUser(f.db, 'ivan');
    const web = new WebClient(f.app);
    expect((await web.signIn('ivan', PASSWORD)).statusCode).toBe(302);
    for (const url of [
      '/-/profile',
      '/profile/applications',
      '/-/user_settings/personal_access_tokens',
      '/-/profile/two_factor_auth',
    ]) {
      const page = await expectHeadLikeGet(f.app, url, { accept: 'text/html', cookie: web.cookieHeader });
      expect(page.statusCode, url).toBe(200);
    }
  });

  it('on a path without GET: the 405 page with Allow, or 404, as for another method', async () => {
    const head = await f.app.inject({
      method: 'HEAD',
      url: '/-/profile/emails/12/primary',
      headers: { accept: 'text/html' },
    });
    const put = await f.app.inject({
      method: 'PUT',
      url: '/-/profile/emails/12/primary',
      headers: { accept: 'text/html' },
    });
    expect({ status: head.statusCode, allow: head.headers.allow, body: head.body }).toEqual({
      status: 405,
      allow: 'POST',
      body: '',
    });
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(put.body.replace('with PUT', 'with HEAD'))));
    // A page path with GET lists HEAD beside it, as before.
    const del = await f.app.inject({ method: 'DELETE', url: '/users/sign_in' });
    expect(del.headers.allow).toBe('GET, HEAD, POST');
    const token = await f.app.inject({ method: 'HEAD', url: '/oauth/token' });
    expect({ status: token.statusCode, body: token.body }).toEqual({ status: 404, body: '' });
    expect(token.headers['content-length']).toBe(
      String(Buffer.byteLength(JSON.stringify({ message: '404 Not Found' }))),
    );
    const api = await f.app.inject({ method: 'HEAD', url: '/api/v4/personal_access_tokens/self/rotate' });
    expect({ status: api.statusCode, body: api.body }).toEqual({ status: 404, body: '' });
  });

  it('registers no HEAD route: the GET route answers it', async () => {
    expect(f.app.hasRoute({ method: 'GET', url: '/api/v4/user' })).toBe(true);
    expect(f.app.hasRoute({ method: 'HEAD', url: '/api/v4/user' })).toBe(false);
    expect(f.app.printRoutes({ commonPrefix: false })).not.toContain('HEAD');
  });

  it('is logged as HEAD, and its handlers see HEAD', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write: (chunk, _enc, cb) => {
        lines.push(String(chunk));
        cb();
      },
    });
    const app = await buildApp({
      db: f.db,
      config: testConfig(),
      logger: { ...(loggerOptions('info') as object), stream } as never,
    });
    try {
      const res = await app.inject({ method: 'HEAD', url: '/-/health' });
      expect(res.statusCode).toBe(200);
      const logged = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'incoming request');
      expect(logged.map((l) => l.req.method)).toEqual(['HEAD']);
      // A malformed path found as GET is still refused as HEAD (the router-level error path).
      const malformed = await app.inject({ method: 'HEAD', url: '/api/v4/users/%E0%A4%A' });
      expect({ status: malformed.statusCode, body: malformed.body }).toEqual({ status: 400, body: '' });
      const last = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'incoming request');
      expect(last.map((l) => l.req.method)).toEqual(['HEAD', 'HEAD']);
    } finally {
      await app.close();
    }
  });
});
