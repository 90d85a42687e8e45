// Hot statements straight on the pool (service/db/hot-statements.ts), on real PostgreSQL: the same
// rows as Kysely gives, one row description per connection (no Describe on later executions), a
// result changed under a prepared statement, errors, transactions and the RDS Proxy switch.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../../../service/db/create-db';
import { runStatement, runStatementHolding } from '../../../service/db/hot-statements';
import type { Db } from '../../../service/db/schema';
import { createTestDatabase } from '../../support/db';

/** Counts the RowDescription messages PostgreSQL sends to the pool's connections. */
function countRowDescriptions(handle: DbHandle): { count: number } {
  const counter = { count: 0 };
  handle.pool.on('connect', (client) => {
    (client as unknown as { connection: NodeJS.EventEmitter }).connection.on('rowDescription', () => {
      counter.count++;
    });
  });
  return counter;
}

const preparedCount = async (db: Db) =>
  Number((await sql<{ n: string }>`select count(*) as n from pg_prepared_statements`.execute(db)).rows[0].n);

const everyType = (db: Db, id: number) =>
  sql<Record<string, unknown>>`
    select ${id}::int8 as id, 'x'::text as text, true as flag, null::text as nothing,
      timestamptz '2026-11-27 04:30:00.123+00' as at, date '2026-11-27' as day,
      array['api', 'read_user']::text[] as scopes, '{"a": [1, null]}'::jsonb as doc, 2.5::float8 as ratio
  `.compile(db);

describe('hot statements', () => {
  it('answer the same rows as Kysely, with the types createDb configures', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1 });
    try {
      const direct = await runStatement(handle.db, everyType(handle.db, 7));
      const kysely = await handle.db.executeQuery(everyType(handle.db, 7));
      expect(direct.rows).toEqual(kysely.rows);
      expect(direct.rows).toEqual([
        {
          id: 7,
          text: 'x',
          flag: true,
          nothing: null,
          at: new Date('2026-11-27T04:30:00.123Z'),
          day: '2026-11-27',
          scopes: ['api', 'read_user'],
          doc: { a: [1, null] },
          ratio: 2.5,
        },
      ]);
      // Column order too (a view serialised from the row keeps it).
      expect(Object.keys(direct.rows[0])).toEqual(Object.keys(kysely.rows[0]));
    } finally {
      await handle.destroy();
    }
  });

  it('name columns as Kysely does: quotes and backslashes, a repeated name, __proto__', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1 });
    try {
      const query = sql<Record<string, unknown>>`
        select ${1}::int as "a""b\\c", 2 as twice, 3 as twice, 4 as "__proto__", 5 as "}); throw 1; ({"
      `.compile(handle.db);
      const direct = (await runStatement(handle.db, query)).rows[0];
      const kysely = (await handle.db.executeQuery(query)).rows[0];
      expect(Object.entries(direct)).toEqual(Object.entries(kysely));
      expect(Object.entries(direct)).toEqual([
        ['a"b\\c', 1],
        ['twice', 3],
        ['__proto__', 4],
        ['}); throw 1; ({', 5],
      ]);
      expect(Object.getPrototypeOf(direct)).toBe(Object.prototype);
    } finally {
      await handle.destroy();
    }
  });

  it('send a statement once per connection with its Describe, then only bind and execute it', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1 });
    const descriptions = countRowDescriptions(handle);
    try {
      const byName = (username: string) =>
        handle.db.selectFrom('users').select(['id', 'username']).where('username', '=', username).compile();
      await handle.db.insertInto('users').values({ username: 'ada', email: 'ada@example.com', name: 'Ada' }).execute();
      const before = descriptions.count;
      const answers = [];
      for (const username of ['ada', 'bob', 'ada'])
        answers.push((await runStatement(handle.db, byName(username))).rows);
      expect(answers.map((rows) => rows.map((r) => r.username))).toEqual([['ada'], [], ['ada']]);
      // The first execution described the statement; the next two did not.
      expect(descriptions.count - before).toBe(1);
      const { rows } = await sql<{ calls: string }>`
        select generic_plans + custom_plans as calls from pg_prepared_statements
        where statement = ${byName('x').sql}
      `.execute(handle.db);
      expect(rows.map((r) => Number(r.calls))).toEqual([3]);
    } finally {
      await handle.destroy();
    }
  });

  it('describe a statement again on each new connection that parses it', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 2 });
    const descriptions = countRowDescriptions(handle);
    try {
      const query = everyType(handle.db, 1);
      // Two at once take both connections; each parses and describes it once.
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all([runStatement(handle.db, query), runStatement(handle.db, query)]);
        expect(results.map((r) => r.rows[0].id)).toEqual([1, 1]);
      }
      expect(descriptions.count).toBe(2);
    } finally {
      await handle.destroy();
    }
  });

  it('parse and describe again a statement whose result changed under it (a column added)', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1 });
    try {
      await sql`create table hot_changing (id int primary key)`.execute(handle.db);
      await sql`insert into hot_changing values (1)`.execute(handle.db);
      // `select *` on purpose: the one way a prepared statement's result changes under it.
      const query = sql<Record<string, unknown>>`select * from hot_changing where id = ${1}`.compile(handle.db);
      expect((await runStatement(handle.db, query)).rows).toEqual([{ id: 1 }]);
      await sql`alter table hot_changing add column note text default 'added'`.execute(handle.db);
      expect((await runStatement(handle.db, query)).rows).toEqual([{ id: 1, note: 'added' }]);
      expect((await runStatement(handle.db, query)).rows).toEqual([{ id: 1, note: 'added' }]);
    } finally {
      await handle.destroy();
    }
  });

  it("reject with PostgreSQL's error, and the connection serves the next statement", async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1 });
    try {
      const insert = (username: string) =>
        handle.db
          .insertInto('users')
          .values({ username, email: `${username}@example.com`, name: username })
          .returning('username')
          .compile();
      expect((await runStatement(handle.db, insert('ada'))).rows).toEqual([{ username: 'ada' }]);
      await expect(runStatement(handle.db, insert('ada'))).rejects.toMatchObject({ code: '23505' });
      expect((await runStatement(handle.db, insert('bob'))).rows).toEqual([{ username: 'bob' }]);
      const count = await handle.db.selectFrom('users').select(sql<number>`count(*)::int`.as('n')).executeTakeFirst();
      expect(count?.n).toBe(2);
    } finally {
      await handle.destroy();
    }
  });

  it('run through Kysely inside a transaction, which sees its own uncommitted rows', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 2 });
    try {
      const seen = await handle.db.transaction().execute(async (trx) => {
        await trx.insertInto('users').values({ username: 'ada', email: 'ada@example.com', name: 'Ada' }).execute();
        const query = trx.selectFrom('users').select('username').where('username', '=', 'ada').compile();
        return (await runStatement(trx, query)).rows;
      });
      expect(seen).toEqual([{ username: 'ada' }]);
    } finally {
      await handle.destroy();
    }
  });

  it('prepare nothing when prepared statements are off (behind RDS Proxy)', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1, preparedStatements: false });
    try {
      expect((await runStatement(handle.db, everyType(handle.db, 3))).rows[0].id).toBe(3);
      expect(await preparedCount(handle.db)).toBe(0);
    } finally {
      await handle.destroy();
    }
  });
  it('bind a holding statement once it has its connection, not while it queues for one', async () => {
    for (const preparedStatements of [true, false]) {
      const t = await createTestDatabase();
      const handle = createDb({ connectionString: t.url, max: 1, preparedStatements });
      try {
        const stamps: string[] = [];
        const holding = (label: string) =>
          runStatementHolding(handle.db, (on) => {
            stamps.push(label);
            return sql<{ label: string }>`select ${label}::text as label`.compile(on);
          });
        // The one connection is held elsewhere: the statement waits for it, unbound.
        const other = await handle.pool.connect();
        const waiting = holding('once released');
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(stamps).toEqual([]);
        other.release();
        expect((await waiting).rows).toEqual([{ label: 'once released' }]);
        expect(stamps).toEqual(['once released']);
        // Inside a transaction it runs there, on the transaction's connection.
        const inside = await handle.db.transaction().execute(async (trx) => {
          await sql`create temporary table holding_seen (n int) on commit drop`.execute(trx);
          return (
            await runStatementHolding(trx, (on) =>
              sql<{ n: number }>`select count(*)::int as n from holding_seen`.compile(on),
            )
          ).rows;
        });
        expect(inside).toEqual([{ n: 0 }]);
        // A named prepared statement on the pool's connection, unless they are off (RDS Proxy).
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from pg_prepared_statements where statement like '%as label'
        `.execute(handle.db);
        expect(rows).toEqual([{ n: preparedStatements ? 1 : 0 }]);
      } finally {
        await handle.destroy();
      }
    }
  });
});
