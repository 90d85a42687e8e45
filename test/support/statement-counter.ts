// A database handle over a test database that records every statement it sends (each one is a
// round trip to PostgreSQL: BEGIN and COMMIT included), for tests that pin how many round trips a
// request takes. Same pool settings and named prepared statements as the service.
import { Kysely, PostgresDialect, type PostgresPool } from 'kysely';
import { afterAll } from 'vitest';
import { preparingPool } from '../../service/db/prepared-statements';
import type { Database, Db } from '../../service/db/schema';
import type { TestDatabase } from './db';

export interface CountingDb {
  db: Db;
  /** The statements sent since the last reset(), in order (SQL text, whitespace collapsed). */
  statements: string[];
  reset(): void;
}

export function countingDb(t: TestDatabase): CountingDb {
  const statements: string[] = [];
  const prepared = preparingPool(t.pool as unknown as PostgresPool);
  const counting: PostgresPool = {
    async connect() {
      const client = await prepared.connect();
      return {
        query: ((text: unknown, values?: unknown) => {
          if (typeof text === 'string') statements.push(text.replace(/\s+/g, ' ').trim());
          return (client.query as (...args: unknown[]) => unknown)(text, values);
        }) as never,
        release: () => client.release(),
      };
    },
    end: async () => undefined,
  };
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: counting }) });
  afterAll(() => db.destroy());
  return { db, statements, reset: () => statements.splice(0) };
}
