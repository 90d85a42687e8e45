// Nothing secret reaches the logs: passwords and client secrets in form bodies, codes, tokens
// and secrets in query strings, Authorization and Cookie headers, Set-Cookie.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../service/app';
import { loggerOptions } from '../../service/http/logging';
import { testConfig } from '../support/app';
import { obtainCode, WebClient } from './support/browser-like';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const f = useFixture();
const lines: string[] = [];
let app: FastifyInstance;

beforeAll(async () => {
  const stream = new Writable({
    write: (chunk, _enc, cb) => {
      lines.push(String(chunk));
      cb();
    },
  });
  app = await buildApp({
    db: f.db,
    config: testConfig(),
    logger: { ...(loggerOptions('debug') as object), stream } as any,
  });
});
afterAll(() => app?.close());

describe('logging', () => {
  it('a full flow logs requests but none of their secrets', async () => {
    await makeUser(f.db, 'alice');
    const c = await makeApp(f.db);
    const web = new WebClient(app);
    await web.signIn('alice', PASSWORD);
    const code = await obtainCode(web, c.clientId, { state: 'st' });
    // Credentials in the query string too (clients do that): the URL is redacted.
    const res = await app.inject({
      method: 'POST',
      url: `/oauth/token?client_id=${c.clientId}&client_secret=${c.secret}`,
      headers: FORM,
      payload: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
    });
    expect(res.statusCode).toBe(200);
    const tokens = res.json();
    await app.inject({ url: `/oauth/token/info?access_token=${tokens.access_token}` });
    await app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${tokens.access_token}` } });
    await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: form({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
    });
    await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: FORM,
      payload: form({ grant_type: 'password', username: 'alice', password: PASSWORD }),
    });

    const log = lines.join('');
    expect(log).toContain('/oauth/token');
    const secrets = [
      PASSWORD,
      c.secret,
      code,
      tokens.access_token,
      tokens.refresh_token,
      ...[...web.cookies.values()].flatMap((v) => v.split('.')),
    ];
    for (const secret of secrets) expect(log).not.toContain(secret);
  });
});
