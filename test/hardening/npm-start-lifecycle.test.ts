// Regressions (issue 11): "npm start's embedded PostgreSQL runs with fsync=off" and "stopping the
// npm start process by its PID leaves the server and PostgreSQL running". The real `npm start`,
// with its own LANYARD_HOME and PORT; SIGTERM (then SIGINT) goes to the npm PID only.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../service/db/local-postgres';
import { ROOT } from '../support/processes';

const started: ChildProcess[] = [];
let home: string;
afterAll(async () => {
  for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
  if (home) await fs.rm(home, { recursive: true, force: true });
});

function npmStart(env: NodeJS.ProcessEnv) {
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not listen:\n${out}`)), 90_000);
    child.stdout!.on('data', () => {
      if (/Lanyard is listening on/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return { child, listening, output: () => out };
}

/** Does anything accept a new TCP connection on the port? (A fresh connection each time: a pooled
 *  keep-alive connection would outlive the listening socket.) */
const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Poll (no timing assertion: the bound only keeps a broken build from hanging the suite). */
async function until(what: string, check: () => Promise<boolean> | boolean, output: () => string, limitMs = 30_000) {
  const end = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`still not: ${what}\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function postmasterPid(): Promise<number> {
  return Number((await fs.readFile(path.join(home, 'pgdata', 'postmaster.pid'), 'utf8')).split('\n')[0]);
}

describe("npm start's embedded PostgreSQL and its shutdown", () => {
  it('fsync is on; SIGTERM or SIGINT to the npm PID closes the port and stops PostgreSQL', async () => {
    home = await fs.mkdtemp(path.join(os.tmpdir(), 'lanyard-npm-start-'));
    await fs.chmod(home, 0o755);
    const port = await freePort();
    const env = { DATABASE_URL: '', LANYARD_HOME: home, PORT: String(port), LOG_LEVEL: 'warn' };

    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const run = npmStart(env);
      await run.listening;
      expect(await answers(port)).toBe(true);
      const pgPid = await postmasterPid();
      expect(alive(pgPid)).toBe(true);
      const state = JSON.parse(await fs.readFile(path.join(home, 'local.json'), 'utf8'));
      const client = new pg.Client({
        connectionString: `postgres://postgres:${state.password}@127.0.0.1:${state.port}/lanyard`,
      });
      await client.connect();
      const { rows } = await client.query('show fsync');
      await client.end();
      expect(rows).toEqual([{ fsync: 'on' }]);

      process.kill(run.child.pid!, signal); // the npm process only, not its group
      await until('the port closed', async () => !(await answers(port)), run.output);
      await until('PostgreSQL exited', () => !alive(pgPid), run.output);
      await expect(fs.access(path.join(home, 'pgdata', 'postmaster.pid'))).rejects.toThrow();
    }
  }, 240_000);
});
