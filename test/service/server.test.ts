// `npm start` (service/server.ts) as a real process: migrations, the root account, health,
// graceful shutdown, the local embedded database, and one-line errors for a bad database.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../service/db/local-postgres';
import { createTestDatabase } from '../support/db';
import { runToEnd, start } from '../support/processes';

async function health(port: number) {
  const res = await fetch(`http://127.0.0.1:${port}/-/health`);
  return { status: res.status, body: await res.json() };
}

describe('npm start (service/server.ts)', () => {
  it('migrates, creates root once with a printed password, serves health and shuts down cleanly', async () => {
    const t = await createTestDatabase();
    const port = await freePort();
    const env = { DATABASE_URL: t.url, PORT: String(port), LOG_LEVEL: 'warn' };

    const first = start('service/server.ts', [], env);
    const [, password] = await first.waitFor(/password: (\S+)/);
    await first.waitFor(new RegExp(`listening on http://127\\.0\\.0\\.1:${port}`));
    expect(password.length).toBeGreaterThanOrEqual(20);
    expect(await health(port)).toEqual({ status: 200, body: { status: 'ok' } });
    const users = await t.db.selectFrom('users').select(['username', 'is_admin', 'password_hash']).execute();
    expect(users.map((u) => [u.username, u.is_admin])).toEqual([['root', true]]);
    expect(users[0].password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(users[0].password_hash).not.toContain(password);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    // A second start reuses the data: no new root, no password printed.
    const second = start('service/server.ts', [], env);
    await second.waitFor(/listening on/);
    expect(second.output().stdout).not.toMatch(/password/);
    expect(await health(port)).toEqual({ status: 200, body: { status: 'ok' } });
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
    expect(await t.db.selectFrom('users').select('username').execute()).toEqual([{ username: 'root' }]);
  });

  it('purges expired rows at start and on its timer (PRUNE_INTERVAL_SECONDS), logging the counts', async () => {
    const t = await createTestDatabase();
    const port = await freePort();
    const expiredSessions = (prefix: string, n: number) =>
      sql`
        insert into web_sessions (id_digest, user_id, data, expires_at)
        select ${prefix} || i, null, '{}', now() - interval '1 minute' from generate_series(1, ${n}::int) i
      `.execute(t.db);
    await expiredSessions('a', 3);
    const env = { DATABASE_URL: t.url, PORT: String(port), LOG_LEVEL: 'info', PRUNE_INTERVAL_SECONDS: '1' };
    const server = start('service/server.ts', [], env);
    await server.waitFor(/"deleted":\{"web_sessions":3,[^}]*\},"total":3,"ms":\d+,"msg":"retention: pruned"/);
    await expiredSessions('b', 2);
    await server.waitFor(/"deleted":\{"web_sessions":2,[^}]*\},"total":2,"ms":\d+,"msg":"retention: pruned"/);
    expect(await t.db.selectFrom('web_sessions').select('id_digest').execute()).toEqual([]);
    const audit = await t.db
      .selectFrom('audit_events')
      .select(['actor', 'action'])
      .where('action', '=', 'db.prune')
      .execute();
    expect(audit).toEqual([
      { actor: 'system:retention-timer', action: 'db.prune' },
      { actor: 'system:retention-timer', action: 'db.prune' },
    ]);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('runs on the local embedded PostgreSQL under LANYARD_HOME and keeps its data across restarts', async () => {
    const home = await fs.mkdtemp(path.join(os.tmpdir(), 'lanyard-home-'));
    const port = await freePort();
    const env = { DATABASE_URL: '', LANYARD_HOME: home, PORT: String(port), LOG_LEVEL: 'warn' };
    try {
      const t0 = Date.now();
      const first = start('service/server.ts', [], env);
      await first.waitFor(/password: (\S+)/, 60_000);
      await first.waitFor(/listening on/, 60_000);
      const startupMs = Date.now() - t0;
      expect(await health(port)).toEqual({ status: 200, body: { status: 'ok' } });
      console.log(`[server] first start on a fresh embedded database: healthy after ${startupMs} ms`);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      // The embedded server was stopped with it.
      await expect(fs.access(path.join(home, 'pgdata', 'postmaster.pid'))).rejects.toThrow();

      const second = start('service/server.ts', [], env);
      await second.waitFor(/listening on/, 60_000);
      expect(second.output().stdout).not.toMatch(/password/);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      await fs.rm(home, { recursive: true, force: true });
    }
  });

  it('opens at most DB_POOL_MAX connections (10 unset) under a burst of requests', async () => {
    const t = await createTestDatabase();
    const serverConnections = async () => {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity
        where datname = ${t.name} and application_name = 'lanyard-server'`.execute(t.db);
      return rows[0].n;
    };
    // Fifty token look-ups at once while a lock holds the tokens' table: each waits on it holding
    // its connection, so the pool opens every connection it may, and no more.
    const connectionsUnderBurst = async (env: Record<string, string>) => {
      const port = await freePort();
      const server = start('service/server.ts', [], {
        DATABASE_URL: t.url,
        PORT: String(port),
        LOG_LEVEL: 'warn',
        ...env,
      });
      await server.waitFor(/listening on/);
      let answers: Promise<number[]> | undefined;
      const opened = await t.db.transaction().execute(async (trx) => {
        await sql`lock table personal_access_tokens in access exclusive mode`.execute(trx);
        answers = Promise.all(
          Array.from({ length: 50 }, () =>
            fetch(`http://127.0.0.1:${port}/api/v4/user`, { headers: { 'private-token': 'glpat-not-a-token' } }).then(
              (res) => res.status,
            ),
          ),
        );
        // Until the count has held still for a second (at most 15 s).
        let last = -1;
        for (let stable = 0, tries = 0; stable < 4 && tries < 60; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          const n = await serverConnections();
          stable = n === last ? stable + 1 : 0;
          last = n;
        }
        return last;
      });
      expect(new Set(await answers)).toEqual(new Set([401]));
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      return opened;
    };
    expect(await connectionsUnderBurst({})).toBe(10);
    expect(await connectionsUnderBurst({ DB_POOL_MAX: '3' })).toBe(3);
  });

  it('explains a bad DB_POOL_MAX in one line', async () => {
    const r = await runToEnd('service/server.ts', [], { DB_POOL_MAX: '0', PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('lanyard: DB_POOL_MAX must be a positive integer (got "0")\n');
  });

  it('explains a malformed DATABASE_URL in one line', async () => {
    const r = await runToEnd('service/server.ts', [], { DATABASE_URL: 'not a url', PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'lanyard: DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)\n',
    );
  });

  it('explains a DATABASE_URL with the wrong scheme in one line', async () => {
    const r = await runToEnd('service/server.ts', [], { DATABASE_URL: 'mysql://u:p@localhost/db', PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('lanyard: DATABASE_URL must start with postgres:// or postgresql:// (got mysql://)\n');
  });

  it('explains an unreachable database server in one line, without the password', async () => {
    const port = await freePort();
    const r = await runToEnd('service/server.ts', [], {
      DATABASE_URL: `postgres://lanyard:s3cret@127.0.0.1:${port}/lanyard`,
      PORT: '0',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `lanyard: cannot connect to 127.0.0.1:${port}/lanyard: connection refused (is PostgreSQL running?)\n`,
    );
  });

  it('explains a bad PORT in one line', async () => {
    const r = await runToEnd('service/server.ts', [], { PORT: 'eighty' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('lanyard: PORT must be a number from 0 to 65535 (got "eighty")\n');
  });
});
