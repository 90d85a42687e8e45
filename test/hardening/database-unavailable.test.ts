// Regression (issue 11, "with PostgreSQL down, the API answers 500"): a real PostgreSQL of this
// file's own is stopped under a running app and started again. While it is down every surface
// answers 503 with Retry-After in its own shape; once it is back the same app serves again
// (no restart).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { createDb, type DbHandle } from '../../service/db/create-db';
import { freePort, initCluster, startCluster, stopCluster } from '../../service/db/local-postgres';
import { migrateToLatest } from '../../service/db/migrator';
import { testConfig } from '../support/app';
import { makePat } from '../support/api-fixtures';
import { WebClient } from '../oauth/support/browser-like';
import { basic, form, FORM, makeApp, makeUser, PASSWORD } from '../oauth/support/harness';

let dir: string;
let dataDir: string;
let port: number;
let handle: DbHandle;
let app: FastifyInstance;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'lanyard-outage-'));
  await fs.chmod(dir, 0o755);
  dataDir = path.join(dir, 'data');
  await initCluster(dataDir, 'outage');
  port = await freePort();
  await startCluster(dataDir, port);
  handle = createDb({ connectionString: `postgres://postgres:outage@127.0.0.1:${port}/postgres`, max: 4 });
  await migrateToLatest(handle.db);
  app = await buildApp({ db: handle.db, config: testConfig(), logger: false });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await handle?.destroy();
  if (dataDir) await stopCluster(dataDir);
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

const OAUTH_503 = {
  error: 'temporarily_unavailable',
  error_description:
    'The authorization server is currently unable to handle the request due to a temporary overloading or maintenance of the server.',
};

describe('with PostgreSQL down, the API answered 500', () => {
  it('503 + Retry-After in each surface while it is down; served again once it is back', async () => {
    const { user } = await makeUser(handle.db, 'alice');
    const c = await makeApp(handle.db);
    const pat = await makePat(handle.db, user, ['api']);
    const web = new WebClient(app);
    expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);

    const requests = {
      api: () => app.inject({ url: '/api/v4/user', headers: { 'private-token': pat } }),
      token: () =>
        app.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
          payload: form({ grant_type: 'password', username: 'alice', password: PASSWORD }),
        }),
      info: () => app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${'a'.repeat(64)}` } }),
      page: () => web.get('/profile/applications'),
      health: () => app.inject({ url: '/-/health' }),
    };
    expect((await requests.api()).statusCode).toBe(200);
    expect((await requests.page()).statusCode).toBe(200);

    await stopCluster(dataDir);

    const api = await requests.api();
    expect({ status: api.statusCode, body: api.json() }).toEqual({
      status: 503,
      body: { message: '503 Service Unavailable' },
    });
    expect(api.headers['retry-after']).toBe('5');
    expect(api.headers['content-type']).toMatch(/^application\/json/);

    for (const res of [await requests.token(), await requests.info()]) {
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 503, body: OAUTH_503 });
      expect(res.headers['retry-after']).toBe('5');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    }

    // Browsers get a page: the web pages and the authorization endpoint.
    const authorize = web.get(`/oauth/authorize?client_id=${c.clientId}&redirect_uri=x&response_type=code`);
    for (const page of [await requests.page(), await authorize]) {
      expect(page.statusCode).toBe(503);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.headers['retry-after']).toBe('5');
      expect(page.body).toContain('<h1>Service unavailable</h1>');
    }

    const health = await requests.health();
    expect({ status: health.statusCode, body: health.json() }).toEqual({
      status: 503,
      body: { status: 'unavailable' },
    });
    expect(health.headers['retry-after']).toBe('5');

    // Back up on the same port: the same app serves again, the session and the token still work.
    await startCluster(dataDir, port);
    expect((await requests.health()).statusCode).toBe(200);
    expect((await requests.api()).statusCode).toBe(200);
    expect((await requests.token()).statusCode).toBe(200);
    expect((await requests.page()).statusCode).toBe(200);
  });
});
