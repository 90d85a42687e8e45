// A database handle over a test database that records every statement it sends (each one is a
// round trip to PostgreSQL: BEGIN and COMMIT included), for tests that pin how many round trips a
// request takes. Made by createDb like the service's (the same pool settings, named prepared
// statements and hot statements run straight on the pool), counted where pg's clients send them.
import { afterAll } from 'vitest';
import { createDb } from '../../service/db/create-db';
import type { Db } from '../../service/db/schema';
import type { TestDatabase } from './db';

export interface CountingDb {
  db: Db;
  /** The statements sent since the last reset(), in order (SQL text, whitespace collapsed). */
  statements: string[];
  reset(): void;
}

export function countingDb(t: TestDatabase): CountingDb {
  const statements: string[] = [];
  const handle = createDb({ connectionString: t.url, max: 10 });
  // Every client of the pool, before its first use: a text, a query config or a submittable.
  handle.pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const [first] = args;
      const text = typeof first === 'string' ? first : (first as { text?: unknown } | undefined)?.text;
      if (typeof text === 'string') statements.push(text.replace(/\s+/g, ' ').trim());
      return query(...args);
    };
  });
  afterAll(() => handle.destroy());
  return { db: handle.db, statements, reset: () => statements.splice(0) };
}
