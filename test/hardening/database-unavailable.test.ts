// Regression (issue 11, "with PostgreSQL down, the API answers 500"): a real PostgreSQL of this
// file's own is stopped under a running app and started again. While it is down every surface
// answers 503 with Retry-After in its own shape; once it is back the same app serves again
// (no restart).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
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

describe('a database that answers but cannot write (issue 22: 500 with a stack per request)', () => {
  /** An app of its own whose log lines are kept (JSON, one per line). */
  async function loggedApp() {
    const lines: Record<string, unknown>[] = [];
    const logged = await buildApp({
      db: handle.db,
      config: testConfig(),
      logger: {
        level: 'info',
        stream: { write: (line: string) => void lines.push(JSON.parse(line)) },
      },
    });
    return { logged, lines };
  }

  async function scenario(name: string, breakWrites: () => Promise<void>, repair: () => Promise<void>, code: string) {
    const username = `${name}-user`;
    const { user } = await makeUser(handle.db, username);
    const c = await makeApp(handle.db);
    const pat = await makePat(handle.db, user, ['api']);
    const { logged, lines } = await loggedApp();
    const web = new WebClient(logged);
    expect((await web.signIn(username, PASSWORD)).statusCode).toBe(302);
    const patsPage = await web.get('/-/user_settings/personal_access_tokens');
    expect(patsPage.statusCode).toBe(200);
    const before = lines.length;
    await breakWrites();
    try {
      // /oauth/token writes a token: the machine endpoint answers OAuth's JSON.
      for (let i = 0; i < 5; i++) {
        const token = await logged.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
          payload: form({ grant_type: 'password', username, password: PASSWORD }),
        });
        expect({ status: token.statusCode, body: token.json() }).toEqual({ status: 503, body: OAUTH_503 });
        expect(token.headers['retry-after']).toBe('5');
        expect(token.headers['cache-control']).toBe('no-store');
      }
      // The API: a write answers GitLab's JSON 503.
      const put = await logged.inject({
        method: 'PUT',
        url: '/api/v4/notification_settings?level=watch',
        headers: { 'private-token': pat },
      });
      expect({ status: put.statusCode, body: put.json() }).toEqual({
        status: 503,
        body: { message: '503 Service Unavailable' },
      });
      expect(put.headers['retry-after']).toBe('5');
      expect(put.headers['content-type']).toBe('application/json');
      // A page's form: an HTML page.
      const created = await web.post('/-/user_settings/personal_access_tokens', {
        authenticity_token: WebClient.csrf(patsPage.body),
        'personal_access_token[name]': 'ci',
        'personal_access_token[scopes][]': 'read_user',
        'personal_access_token[expires_at]': new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10),
      });
      expect(created.statusCode).toBe(503);
      expect(created.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(created.headers['retry-after']).toBe('5');
      expect(created.body).toContain('<h1>Service unavailable</h1>');
      expect(created.body).not.toContain(code);
      // Logged once for the burst of seven refusals, with the SQLSTATE and no stack.
      const warnings = lines.slice(before).filter((l) => l.msg === 'database unavailable: answering 503');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40, database: { code }, suppressed: 0 });
      expect(JSON.stringify(lines.slice(before))).not.toMatch(/"stack"| {4}at /);
      expect(lines.slice(before).filter((l) => Number(l.level) >= 50)).toEqual([]);
    } finally {
      await repair();
    }
    // Writable again: the same app serves the write.
    const again = await web.get('/-/user_settings/personal_access_tokens');
    const ok = await web.post('/-/user_settings/personal_access_tokens', {
      authenticity_token: WebClient.csrf(again.body),
      'personal_access_token[name]': 'ci',
      'personal_access_token[scopes][]': 'read_user',
      'personal_access_token[expires_at]': new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10),
    });
    expect(ok.statusCode).toBe(303);
    await logged.close();
  }

  it('read-only (default_transaction_read_only, SQLSTATE 25006): 503 + Retry-After on every surface, one log line', async () => {
    await scenario(
      'readonly',
      async () => {
        await sql`alter system set default_transaction_read_only = on`.execute(handle.db);
        await sql`select pg_reload_conf()`.execute(handle.db);
        // The reload reaches every backend asynchronously: wait until a new statement sees it.
        for (let i = 0; i < 50; i++) {
          const { rows } = await sql<{ v: string }>`show default_transaction_read_only`.execute(handle.db);
          if (rows[0].v === 'on') break;
          await new Promise((r) => setTimeout(r, 50));
        }
      },
      async () => {
        await sql`alter system reset default_transaction_read_only`.execute(handle.db);
        await sql`select pg_reload_conf()`.execute(handle.db);
        for (let i = 0; i < 50; i++) {
          const { rows } = await sql<{ v: string }>`show default_transaction_read_only`.execute(handle.db);
          if (rows[0].v === 'off') break;
          await new Promise((r) => setTimeout(r, 50));
        }
      },
      '25006',
    );
  });

  it('disk full (SQLSTATE 53100, raised by a trigger where a write would extend a file): the same', async () => {
    await scenario(
      'diskfull',
      async () => {
        await sql`
          create function lanyard_test_disk_full() returns trigger language plpgsql as $$
          begin
            raise exception using errcode = '53100', message = 'could not extend file "base/5/16384": No space left on device';
          end $$;
          create trigger disk_full before insert or update on oauth_access_tokens for each statement execute function lanyard_test_disk_full();
          create trigger disk_full before insert or update on notification_settings for each statement execute function lanyard_test_disk_full();
          create trigger disk_full before insert or update on personal_access_tokens for each statement execute function lanyard_test_disk_full();
          create trigger disk_full before insert or update on users for each statement execute function lanyard_test_disk_full();
        `.execute(handle.db);
      },
      async () => {
        await sql`drop function lanyard_test_disk_full() cascade`.execute(handle.db);
      },
      '53100',
    );
  });
});
