// Named prepared statements (service/db/prepared-statements.ts), on real PostgreSQL: what the
// database's session holds after our queries, the cap on distinct texts, the switch that turns them
// off (behind RDS Proxy), and a statement whose result changed under it (a column added by a
// migration while the service runs).
import { Kysely, PostgresDialect, type PostgresPool, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../service/config';
import { createDb } from '../../../service/db/create-db';
import { preparingPool, StatementNames } from '../../../service/db/prepared-statements';
import type { Database, Db } from '../../../service/db/schema';
import { createTestDatabase } from '../../support/db';

/** The prepared statements of the (single) pooled session, by text. */
async function preparedTexts(db: Db): Promise<string[]> {
  const { rows } = await sql<{
    statement: string;
  }>`select statement from pg_prepared_statements order by statement`.execute(db);
  return rows.map((r) => r.statement);
}

describe('named prepared statements', () => {
  it('prepares a parameterised query once per session and binds it on every later run', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1 });
    try {
      for (const username of ['a', 'b', 'c']) {
        const row = await handle.db
          .selectFrom('users')
          .select('id')
          .where('username', '=', username)
          .executeTakeFirst();
        expect(row).toBeUndefined();
      }
      expect(await preparedTexts(handle.db)).toEqual(['select "id" from "users" where "username" = $1']);
      const { rows } = await sql<{ calls: number }>`
        select generic_plans + custom_plans as calls from pg_prepared_statements
        where statement like 'select "id" from "users"%'
      `.execute(handle.db);
      expect(Number(rows[0].calls)).toBe(3);
    } finally {
      await handle.destroy();
    }
  });

  it('sends nothing prepared when switched off (DB_PREPARED_STATEMENTS=false, behind RDS Proxy)', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1, preparedStatements: false });
    try {
      await handle.db.selectFrom('users').select('id').where('username', '=', 'a').execute();
      expect(await preparedTexts(handle.db)).toEqual([]);
    } finally {
      await handle.destroy();
    }
  });

  it('two wrappers over one pool never give one name to two texts on a connection', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1 });
    const other = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: preparingPool(handle.pool as unknown as PostgresPool) }),
    });
    try {
      // Different texts, first use through each wrapper, on the pool's single connection.
      await handle.db.selectFrom('users').select('id').where('username', '=', 'a').execute();
      await other.selectFrom('groups').select('id').where('path', '=', 'a').execute();
      await handle.db.selectFrom('groups').select('id').where('path', '=', 'b').execute();
      await other.selectFrom('users').select('id').where('username', '=', 'b').execute();
      expect(await preparedTexts(handle.db)).toEqual([
        'select "id" from "groups" where "path" = $1',
        'select "id" from "users" where "username" = $1',
      ]);
    } finally {
      await other.destroy();
    }
  });

  it('names at most `max` distinct texts; past the cap, queries still run, unnamed', () => {
    const names = new StatementNames(2);
    expect(names.nameOf('select $1')).toBe('lanyard_1');
    expect(names.nameOf('select $1, $2')).toBe('lanyard_2');
    expect(names.nameOf('select $1')).toBe('lanyard_1');
    expect(names.nameOf('select $1, $2, $3')).toBeUndefined();
    expect(names.size).toBe(2);
    names.forget('select $1');
    expect(names.nameOf('select $1, $2, $3')).toBe('lanyard_3');
    expect(names.nameOf('select $1')).toBeUndefined();
  });

  it('re-prepares a statement whose result changed under it (a column added while running)', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1 });
    const db = handle.db;
    try {
      await sql`create table widgets (id int primary key)`.execute(db);
      await sql`insert into widgets values (1)`.execute(db);
      const read = () => sql<Record<string, unknown>>`select * from widgets where id = ${1}`.execute(db);
      expect((await read()).rows).toEqual([{ id: 1 }]);
      await sql`alter table widgets add column colour text default 'blue'`.execute(db);
      // Outside a transaction: run again at once under a fresh name.
      expect((await read()).rows).toEqual([{ id: 1, colour: 'blue' }]);
      // Inside one, the stale statement aborts the transaction: the caller sees the error once…
      await sql`alter table widgets add column size int default 3`.execute(db);
      await expect(
        db.transaction().execute((trx) => sql`select * from widgets where id = ${1}`.execute(trx)),
      ).rejects.toMatchObject({
        code: '0A000',
      });
      // …and the next use prepares the new shape.
      expect((await read()).rows).toEqual([{ id: 1, colour: 'blue', size: 3 }]);
    } finally {
      await handle.destroy();
    }
  });

  it('DB_PREPARED_STATEMENTS: on by default, GitLab boolean spellings, anything else refused', () => {
    expect(loadConfig({}).dbPreparedStatements).toBe(true);
    expect(loadConfig({ DB_PREPARED_STATEMENTS: 'false' }).dbPreparedStatements).toBe(false);
    expect(loadConfig({ DB_PREPARED_STATEMENTS: '0' }).dbPreparedStatements).toBe(false);
    expect(loadConfig({ DB_PREPARED_STATEMENTS: 'true' }).dbPreparedStatements).toBe(true);
    expect(() => loadConfig({ DB_PREPARED_STATEMENTS: 'off-ish' })).toThrow(ConfigError);
    expect(() => loadConfig({ DB_PREPARED_STATEMENTS: 'nope' })).toThrow(
      'DB_PREPARED_STATEMENTS must be true or false (got "nope")',
    );
  });
});
