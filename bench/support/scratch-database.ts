// A benchmark's own PostgreSQL (TEST_DATABASE_URL's server, else an embedded one) holding one empty
// database named for the benchmark and this process; close() drops it and stops the server.
import pg from 'pg';
import { createDb, type DbHandle } from '../../service/db/create-db';
import { startTestPostgres, type TestPostgres } from '../../test/support/postgres-server';

export interface ScratchDatabase extends DbHandle {
  kind: TestPostgres['kind'];
  close(): Promise<void>;
}

export async function startScratchDatabase(label: string, max: number): Promise<ScratchDatabase> {
  const server = await startTestPostgres();
  const name = `lanyard_bench_${label}_${process.pid}`;
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(server.adminUrl);
  url.pathname = `/${name}`;
  const handle = createDb({ connectionString: url.toString(), max });
  return {
    ...handle,
    kind: server.kind,
    async close() {
      await handle.destroy();
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
      await server.stop();
    },
  };
}
