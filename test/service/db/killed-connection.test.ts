// Regression (found by test/attack/database-outage.test.ts): a pooled connection killed by the
// server while checked out between two statements of a transaction emitted 'error' with no
// listener: an uncaught exception that ended the process (`npm start`) on a PostgreSQL restart.
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createDb } from '../../../service/db/create-db';
import { createTestDatabase } from '../../support/db';

const uncaught: unknown[] = [];
const record = (err: unknown) => uncaught.push(err);
afterEach(() => {
  process.off('uncaughtException', record);
});

describe('a connection killed between two statements of a transaction', () => {
  it('fails the transaction, crashes nothing, and the pool serves the next query', async () => {
    process.on('uncaughtException', record);
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 2 });
    const killer = new pg.Client({ connectionString: t.url });
    await killer.connect();
    try {
      const outcome = await handle.db
        .transaction()
        .execute(async (trx) => {
          const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
          await killer.query('select pg_terminate_backend($1)', [rows[0].pid]);
          // The FATAL arrives while no statement runs on the connection.
          await new Promise((r) => setTimeout(r, 300));
          await sql`select 1`.execute(trx);
          return 'committed';
        })
        .catch((err: Error) => `failed: ${err.message}`);
      expect(outcome).toMatch(/^failed: /);
      expect(uncaught).toEqual([]);
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(handle.db);
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await killer.end();
      await handle.destroy();
    }
  });
});
