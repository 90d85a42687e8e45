// Statement templates (service/db/statement-templates.ts), on real PostgreSQL: a shape is built
// once and each call gets its own values; a value that is not a slot is refused when the shape is
// first built (it would otherwise be frozen into every later call); the cap on kept shapes.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createDb } from '../../../service/db/create-db';
import { statementTemplates } from '../../../service/db/statement-templates';
import { createTestDatabase } from '../../support/db';

describe('statement templates', () => {
  it('builds a shape once and binds each call to its own values', async () => {
    const t = await createTestDatabase();
    const handle = createDb({ connectionString: t.url, max: 1 });
    try {
      const templates = statementTemplates<'a' | 'b'>();
      let builds = 0;
      const run = async (a: number, b: string) => {
        const query = templates.bind(handle.db, 'sum', { a, b }, (slot) => {
          builds++;
          return sql<{
            a: number;
            b: string;
            again: number;
          }>`select ${slot('a')}::int as a, ${slot('b')}::text as b, ${slot('a')}::int + 1 as again`;
        });
        return (await handle.db.executeQuery(query)).rows;
      };
      expect(await run(1, 'x')).toEqual([{ a: 1, b: 'x', again: 2 }]);
      expect(await run(41, 'y')).toEqual([{ a: 41, b: 'y', again: 42 }]);
      expect(builds).toBe(1);
      expect(templates.size).toBe(1);
    } finally {
      await handle.destroy();
    }
  });

  it('refuses a parameter that is not a slot, naming the shape', () => {
    const handle = createDb({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    const templates = statementTemplates<'a'>();
    const frozen = 7;
    expect(() =>
      templates.bind(handle.db, 'frozen', { a: 1 }, (slot) => sql`select ${slot('a')}::int + ${frozen}`),
    ).toThrow('statement template "frozen": a parameter that is not a slot');
    expect(templates.size).toBe(0);
    void handle.destroy();
  });

  it('keeps at most its cap of shapes and still binds the shapes beyond it', async () => {
    const handle = createDb({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    const templates = statementTemplates<'a'>(2);
    const compiled = ['one', 'two', 'three'].map((key) =>
      templates.bind(handle.db, key, { a: key }, (slot) => sql`select ${slot('a')}::text as ${sql.ref(key)}`),
    );
    expect(templates.size).toBe(2);
    expect(compiled.map((c) => [c.sql, c.parameters])).toEqual([
      ['select $1::text as "one"', ['one']],
      ['select $1::text as "two"', ['two']],
      ['select $1::text as "three"', ['three']],
    ]);
    await handle.destroy();
  });
});
