// The attack suite, part 3: PostgreSQL stopped and restarted under load. A PostgreSQL of this
// file's own (embedded, fresh data directory) so stopping it disturbs no other test. While 8
// workers write notification settings (each PUT to a project never written before, so every
// acknowledged write can be checked afterwards) and read, and a poller asks /-/health every 25 ms:
// stop the server, keep it down, start it again on the same port.
// Contract (issue 11): health says 503 within 1 s of the database going away and 200 within 2 s of
// its return (generous correctness limits, not benchmarks); no response ≥ 500 except the
// deliberate 503 while it is down; 0 lost acknowledged writes.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../../service/db/create-db';
import { freePort, initCluster, startCluster, stopCluster } from '../../service/db/local-postgres';
import { migrateToLatest } from '../../service/db/migrator';
import { buildTestApp } from '../support/app';
import { makeOAuthToken, makeUser } from '../support/api-fixtures';

const WORKERS = 8;
const PROJECTS = 20_000;
const LEVELS = ['disabled', 'participating', 'watch', 'global', 'mention'] as const;

let dir: string;
let dataDir: string;
let port: number;
let handle: DbHandle;
let app: FastifyInstance;
let bearer: string;
let userId: number;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'lanyard-outage-'));
  await fs.chmod(dir, 0o755);
  dataDir = path.join(dir, 'data');
  await initCluster(dataDir, 'outage');
  port = await freePort();
  await startCluster(dataDir, port);
  handle = createDb({ connectionString: `postgres://postgres:outage@127.0.0.1:${port}/postgres`, max: 10 });
  await migrateToLatest(handle.db);
  const user = await makeUser(handle.db, 'alice');
  userId = user.id;
  bearer = await makeOAuthToken(handle.db, user, ['api']);
  await sql`
    insert into groups (path, name, full_path, visibility) values ('acme', 'Acme', 'acme', 'public');
    insert into projects (group_id, path, name, path_with_namespace, visibility)
      select g.id, 'p' || i, 'p' || i, 'acme/p' || i, 'public' from groups g, generate_series(1, ${sql.lit(PROJECTS)}) i;
  `.execute(handle.db);
  app = await buildTestApp(handle.db);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await handle?.destroy();
  if (dataDir) await stopCluster(dataDir);
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PostgreSQL stopped and restarted under load', () => {
  it('health turns 503 and back, nothing answers ≥ 500 but the 503s, and no acknowledged write is lost', async () => {
    const firstProject = (
      await handle.db.selectFrom('projects').select(sql<number>`min(id)`.as('id')).executeTakeFirstOrThrow()
    ).id;
    let next = 0;
    let running = true;
    const statuses = new Map<string, number>();
    const count = (what: string, status: number) => {
      const key = `${what} ${status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    };
    /** Every PUT answered 200: the project and the level the server acknowledged. */
    const acknowledged: Array<[number, string]> = [];

    const worker = async (w: number) => {
      for (let i = 0; running && next < PROJECTS; i++) {
        if (i % 4 === 3) {
          const res = await app.inject({ url: '/api/v4/user', headers: { authorization: `Bearer ${bearer}` } });
          count('GET /api/v4/user', res.statusCode);
          continue;
        }
        const projectId = firstProject + next++;
        const level = LEVELS[(projectId + w) % LEVELS.length];
        const res = await app.inject({
          method: 'PUT',
          url: `/api/v4/projects/${projectId}/notification_settings`,
          headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ level }),
        });
        count('PUT', res.statusCode);
        if (res.statusCode === 200) acknowledged.push([projectId, level]);
        // While the database is down requests fail fast: do not spin.
        if (res.statusCode >= 500) await sleep(5);
      }
    };

    const health: Array<[number, number]> = [];
    const poller = (async () => {
      while (running) {
        const res = await app.inject({ url: '/-/health' });
        health.push([Date.now(), res.statusCode]);
        count('GET /-/health', res.statusCode);
        await sleep(25);
      }
    })();

    const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
    await sleep(1000);
    const stopping = Date.now();
    await stopCluster(dataDir);
    const down = Date.now();
    await sleep(2000);
    const restarting = Date.now();
    await startCluster(dataDir, port);
    const up = Date.now();
    await sleep(1500);
    running = false;
    await Promise.all([...workers, poller]);

    const firstAfter = (since: number, status: number) => health.find(([t, s]) => t >= since && s === status)?.[0];
    const first503 = firstAfter(stopping, 503);
    const first200 = firstAfter(up, 200);
    const stored = new Map(
      (
        await handle.db
          .selectFrom('notification_settings')
          .select(['project_id', 'level'])
          .where('user_id', '=', userId)
          .where('project_id', 'is not', null)
          .execute()
      ).map((r) => [r.project_id, r.level]),
    );
    const lost = acknowledged.filter(([projectId, level]) => stored.get(projectId) !== level);
    const all = [...statuses].map(([k, n]) => ({ k, status: Number(k.split(' ').pop()), n }));
    const sent = all.reduce((a, b) => a + b.n, 0);
    console.log(
      `[attack] outage: ${sent} requests (${acknowledged.length} acknowledged writes, ${lost.length} lost); ` +
        `pg_ctl stop took ${down - stopping} ms, start ${up - restarting} ms; ` +
        `health 503 ${first503 === undefined ? 'never' : `${first503 - stopping} ms after the stop began (${first503 - down} ms after it completed)`}, ` +
        `200 again ${first200 === undefined ? 'never' : `${first200 - up} ms after it was back`}; ` +
        `max status ${Math.max(...all.map((s) => s.status))}; ${all.map((s) => `${s.k}×${s.n}`).join(', ')}`,
    );

    expect(first503, 'health said 503 while the database was down').toBeDefined();
    expect(first503! - down, 'health says 503 within 1 s of the database going away').toBeLessThanOrEqual(1000);
    expect(first200, 'health recovered without a restart').toBeDefined();
    expect(first200! - up, 'health says 200 within 2 s of the database coming back').toBeLessThanOrEqual(2000);
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(lost).toEqual([]);
    // The deliberate 503 is the only status ≥ 500.
    expect(all.filter((s) => s.status >= 500 && s.status !== 503).map((s) => `${s.k}×${s.n}`)).toEqual([]);
    // Writes work again after the restart.
    const after = await app.inject({
      method: 'PUT',
      url: `/api/v4/projects/${firstProject}/notification_settings`,
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ level: 'watch' }),
    });
    expect(after.statusCode).toBe(200);
  }, 90_000);
});
