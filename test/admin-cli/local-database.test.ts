// Without DATABASE_URL the CLI uses the embedded PostgreSQL under LANYARD_HOME that `npm start`
// uses: it starts it on demand (progress on stderr, never on stdout) and stops it again, and while
// the server runs it attaches to the same instance without disturbing it.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../service/db/local-postgres';
import { ROOT, start } from '../support/processes';

function lanyardAdmin(args: string[], env: NodeJS.ProcessEnv, stdin = '') {
  return new Promise<{ code: number | null; out: string; err: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'lanyard-admin.cjs'), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
    child.stdin.end(stdin);
  });
}

const health = async (port: number) => (await fetch(`http://127.0.0.1:${port}/-/health`)).status;

describe('the local embedded database', () => {
  it('is started on demand and stopped after; shared with a running `npm start`', async () => {
    const home = await fs.mkdtemp(path.join(os.tmpdir(), 'lanyard-cli-home-'));
    const port = await freePort();
    const env = { DATABASE_URL: '', LANYARD_HOME: home, PORT: String(port), LOG_LEVEL: 'warn' };
    try {
      const migrate = await lanyardAdmin(['db', 'migrate', '--json'], env);
      expect(migrate.code, migrate.err).toBe(0);
      expect(JSON.parse(migrate.out)).toEqual({
        applied: expect.arrayContaining(['0001-initial-schema']),
        pending: [],
      });
      expect(migrate.err).toMatch(/PostgreSQL/); // progress went to stderr
      await expect(fs.access(path.join(home, 'pgdata', 'postmaster.pid'))).rejects.toThrow(); // stopped again

      const server = start('service/server.ts', [], env);
      await server.waitFor(/listening on/, 60_000);
      const list = await lanyardAdmin(['users', 'list', '--json'], env);
      expect(list.code, list.err).toBe(0);
      expect(JSON.parse(list.out).map((u: { username: string }) => u.username)).toEqual(['root']);
      const created = await lanyardAdmin(
        ['users', 'create', '--username', 'alice', '--email', 'alice@example.com', '--password-stdin', '--json'],
        env,
        'correct horse battery staple\n',
      );
      expect(created.code, created.err).toBe(0);
      // The CLI left the server's database running.
      expect(await health(port)).toBe(200);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    } finally {
      await fs.rm(home, { recursive: true, force: true });
    }
  }, 180_000);

  it('brings a fresh local database up to date by itself, as npm start would (no separate db migrate)', async () => {
    const home = await fs.mkdtemp(path.join(os.tmpdir(), 'lanyard-cli-home-'));
    const env = { DATABASE_URL: '', LANYARD_HOME: home };
    try {
      const created = await lanyardAdmin(['groups', 'create', '--path', 'acme', '--json'], env);
      expect(created.code, created.err).toBe(0);
      expect(JSON.parse(created.out)).toEqual({ id: 1, full_path: 'acme', name: 'acme', visibility: 'private' });
      expect(created.err).toMatch(
        /Applied migrations to the local database: 0001-initial-schema, 0008-retention-indexes/,
      );
      const status = await lanyardAdmin(['db', 'status', '--json'], env);
      expect(JSON.parse(status.out)).toEqual({
        applied: ['0001-initial-schema', '0008-retention-indexes'],
        pending: [],
      });
      expect(status.err).not.toMatch(/Applied migrations/);
    } finally {
      await fs.rm(home, { recursive: true, force: true });
    }
  }, 120_000);
});
