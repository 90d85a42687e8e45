// Migration 0015 (account e-mails) on a database that has users: an operator typed every existing
// primary address, so each counts as confirmed afterwards (a missing confirmed_at becomes the
// account's creation time); existing secondary addresses keep their confirmation.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../../migrations';
import { createMigrator, migrateToLatest } from '../../../service/db/migrator';
import { createTestDatabase } from '../../support/db';

const NAME = '0015-account-emails';

describe('migration 0015-account-emails', () => {
  it('existing primary addresses become confirmed; secondary ones keep their state', async () => {
    const t = await createTestDatabase({ max: 1 });
    const names = Object.keys(migrations);
    const before = names[names.indexOf(NAME) - 1];
    const down = await createMigrator(t.db).migrateTo(before);
    expect(down.error).toBeUndefined();

    await sql`
      insert into users (username, email, name, confirmed_at, created_at)
      values ('typed', 'typed@example.com', 'Typed', null, '2026-01-02T03:04:05Z'),
             ('known', 'known@example.com', 'Known', '2026-02-03T04:05:06Z', '2026-01-01T00:00:00Z')
    `.execute(t.db);
    await sql`
      insert into user_emails (user_id, email, confirmed_at)
      select id, 'vouched@example.com', '2026-03-01T00:00:00Z' from users where username = 'known'
    `.execute(t.db);

    const up = await migrateToLatest(t.db);
    expect(up.newlyApplied).toContain(NAME);
    const users = await t.db.selectFrom('users').select(['username', 'confirmed_at']).orderBy('username').execute();
    expect(users).toEqual([
      { username: 'known', confirmed_at: new Date('2026-02-03T04:05:06Z') },
      { username: 'typed', confirmed_at: new Date('2026-01-02T03:04:05Z') },
    ]);
    expect(
      await t.db.selectFrom('user_emails').select(['email', 'confirmed_at', 'confirmation_digest']).execute(),
    ).toEqual([
      { email: 'vouched@example.com', confirmed_at: new Date('2026-03-01T00:00:00Z'), confirmation_digest: null },
    ]);
  });
});
