// One real PostgreSQL server for a test run: TEST_DATABASE_URL if set, else a testcontainers
// PostgreSQL 17 when a container runtime answers, else embedded PostgreSQL in a fresh temp dir.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, initCluster, startCluster, stopCluster } from '../../service/db/local-postgres';

export interface TestPostgres {
  /** A superuser (or CREATEDB) URL to the maintenance database `postgres`. */
  adminUrl: string;
  kind: 'external' | 'testcontainers' | 'embedded';
  stop(): Promise<void>;
}

async function tryTestcontainers(): Promise<TestPostgres | undefined> {
  try {
    const tc: any = await import('testcontainers');
    await tc.getContainerRuntimeClient();
  } catch {
    return undefined; // no runtime (or the module cannot load on this Node): fall back
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:17-alpine').start();
  const url = new URL(container.getConnectionUri());
  url.pathname = '/postgres';
  return { adminUrl: url.toString(), kind: 'testcontainers', stop: async () => void (await container.stop()) };
}

async function startEmbedded(): Promise<TestPostgres> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'lanyard-test-pg-'));
  await fs.chmod(dir, 0o755);
  const dataDir = path.join(dir, 'data');
  const password = 'test';
  await initCluster(dataDir, password);
  const port = await freePort();
  // Throwaway data: fsync off keeps the suite fast (npm start's database keeps it on).
  await startCluster(dataDir, port, ['-c fsync=off']);
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    kind: 'embedded',
    async stop() {
      await stopCluster(dataDir);
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const external = process.env.TEST_DATABASE_URL?.trim();
  if (external) return { adminUrl: external, kind: 'external', stop: async () => {} };
  return (await tryTestcontainers()) ?? (await startEmbedded());
}
