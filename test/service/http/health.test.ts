import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createDb } from '../../../service/db/create-db';
import { freePort } from '../../../service/db/local-postgres';
import { buildTestApp } from '../../support/app';
import { createTestDatabase } from '../../support/db';

describe('GET /-/health', () => {
  it('is 200 {"status":"ok"} when the database answers', async () => {
    const t = await createTestDatabase();
    const app = await buildTestApp(t.db);
    const res = await app.inject({ method: 'GET', url: '/-/health' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('is 503 once the database goes away (connections killed, database dropped)', async () => {
    const t = await createTestDatabase();
    const app = await buildTestApp(t.db);
    expect((await app.inject({ method: 'GET', url: '/-/health' })).statusCode).toBe(200);
    const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
    await admin.connect();
    await admin.query(`drop database ${t.name} with (force)`);
    await admin.end();
    const res = await app.inject({ method: 'GET', url: '/-/health' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'unavailable' });
  });

  it('is 503 when no server listens at the database address', async () => {
    const port = await freePort();
    const handle = createDb({ connectionString: `postgres://u:p@127.0.0.1:${port}/x`, max: 1 });
    const app = await buildTestApp(handle.db);
    const res = await app.inject({ method: 'GET', url: '/-/health' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'unavailable' });
    await handle.destroy();
  });
});
