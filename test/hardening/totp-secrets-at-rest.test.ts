// Regression (issue 11, "TOTP secrets are stored in clear"): a TOTP secret is sealed at rest
// (AES-256-GCM, a key derived from the service key ring, the key id stored with it), no column
// holds it in clear, sign-in with TOTP works, and still works after `secrets rotate session-key`
// (which re-seals every secret under the new key). A secret from before (in clear) keeps
// working and is sealed on use; migration 0003 seals existing rows with the database's ring.
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { createMigrator, migrateToLatest } from '../../service/db/migrator';
import { parseKeyRingDocument, rotateSessionKey } from '../../service/domain/service-keys';
import { serviceKeyFileStore } from '../../service/local/service-key-file';
import { testKeyRing } from '../support/app';
import { totp } from '../support/totp';
import { openTotpSecret } from '../../service/domain/totp-secrets';
import { createTestDatabase, resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
beforeEach(() => resetDatabase(f.db));

/** Every text-like column of every table that contains `needle`. */
async function columnsContaining(db: typeof f.db, needle: string): Promise<string[]> {
  const { rows: columns } = await sql<{ table_name: string; column_name: string }>`
    select table_name, column_name from information_schema.columns
    where table_schema = 'public' and data_type in ('text', 'character varying', 'ARRAY', 'jsonb', 'json')`.execute(db);
  const hits: string[] = [];
  for (const { table_name, column_name } of columns) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from ${sql.table(table_name)}
      where ${sql.ref(column_name)}::text like ${`%${needle}%`}`.execute(db);
    if (rows[0].n > 0) hits.push(`${table_name}.${column_name}`);
  }
  return hits;
}

const storedSecret = async (username: string) =>
  await f.db
    .selectFrom('users')
    .select(['id', 'otp_secret'])
    .where('username', '=', username)
    .executeTakeFirstOrThrow();

async function signInWithTotp(username: string, code: string) {
  const web = new WebClient(f.app);
  const res = await web.signIn(username, PASSWORD, () => code);
  return res;
}

describe('TOTP secrets are stored in clear', () => {
  it('enrolment seals the secret; no column holds it; sign-in works before and after a key rotation', async () => {
    const { otpSecret } = await makeUser(f.db, 'alice', { twoFactor: true });
    const ring = await testKeyRing();
    const row = await storedSecret('alice');
    expect(row.otp_secret).toMatch(new RegExp(`^totp1\\.${ring.signing.id}\\.[A-Za-z0-9_-]{16}\\.[A-Za-z0-9_-]{48,}$`));
    expect(await columnsContaining(f.db, otpSecret!)).toEqual([]);
    // Bound to its user: copied onto another user it does not open.
    expect(() => openTotpSecret(ring, row.id + 1, row.otp_secret!)).toThrow();

    const first = await signInWithTotp('alice', totp(otpSecret!));
    expect(first.statusCode).toBe(302);
    expect(first.headers.location).toBe('/-/profile');

    const rotation = await rotateSessionKey(f.db, serviceKeyFileStore(f.config.home), 'test');
    expect(rotation.resealedTotpSecrets).toBe(1);
    const after = await storedSecret('alice');
    expect(after.otp_secret).toMatch(new RegExp(`^totp1\\.${rotation.keyId}\\.`));
    expect(await columnsContaining(f.db, otpSecret!)).toEqual([]);
    // The app's cached ring predates the rotation: it picks the new key up by itself.
    const second = await signInWithTotp('alice', totp(otpSecret!, Date.now() + 30_000));
    expect(second.statusCode).toBe(302);
    expect(second.headers.location).toBe('/-/profile');
  });

  it('a secret still in clear (enrolled before encryption) works once more and is sealed on use', async () => {
    const { user } = await makeUser(f.db, 'bob');
    const legacy = 'JBSWY3DPEHPK3PXP';
    await f.db.updateTable('users').set({ otp_secret: legacy }).where('id', '=', user.id).execute();
    const res = await signInWithTotp('bob', totp(legacy));
    expect(res.statusCode).toBe(302);
    expect((await storedSecret('bob')).otp_secret).toMatch(/^totp1\./);
    expect(await columnsContaining(f.db, legacy)).toEqual([]);
  });
});

describe('migration 0003-encrypt-totp-secrets', () => {
  it('seals the secrets in clear with the newest key of service_keys (before 0012 moved the ring out)', async () => {
    const t = await createTestDatabase();
    const down = await createMigrator(t.db).migrateTo('0001-initial-schema');
    expect(down.error).toBeUndefined();
    // Before 0012 a local installation kept its ring in service_keys.
    await sql`insert into service_keys (purpose, secret) values ('session', ${'k'.repeat(43)})`.execute(t.db);
    const legacy = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
    const { id } = await t.db
      .insertInto('users')
      .values({ username: 'carol', email: 'carol@example.com', name: 'Carol', otp_secret: legacy })
      .returning('id')
      .executeTakeFirstOrThrow();
    await t.db
      .insertInto('users')
      .values({ username: 'dave', email: 'dave@example.com', name: 'Dave', otp_secret: null })
      .execute();
    expect((await createMigrator(t.db).migrateTo('0003-encrypt-totp-secrets')).error).toBeUndefined();
    const rows = await t.db.selectFrom('users').select(['username', 'otp_secret']).orderBy('id').execute();
    expect(rows[1]).toEqual({ username: 'dave', otp_secret: null });
    expect(rows[0].otp_secret).toMatch(/^totp1\.\d+\./);
    expect(await columnsContaining(t.db, legacy)).toEqual([]);
    const databaseRing = parseKeyRingDocument(
      JSON.stringify({
        keys: [{ id: '1', secret: 'k'.repeat(43), created_at: '2026-01-01T00:00:00Z', retired_at: null }],
      }),
    );
    const opened = openTotpSecret(databaseRing, id, rows[0].otp_secret!);
    expect(opened).toEqual({ secret: legacy, stale: false });
    // And back down: in clear again.
    expect((await createMigrator(t.db).migrateTo('0001-initial-schema')).error).toBeUndefined();
    expect(
      (await t.db.selectFrom('users').select('otp_secret').where('id', '=', id).executeTakeFirstOrThrow()).otp_secret,
    ).toBe(legacy);
  });

  it('without a key in service_keys (a deployed stack keeps its ring in Secrets Manager) it changes nothing', async () => {
    const t = await createTestDatabase();
    expect((await createMigrator(t.db).migrateTo('0001-initial-schema')).error).toBeUndefined();
    await t.db
      .insertInto('users')
      .values({ username: 'erin', email: 'erin@example.com', name: 'Erin', otp_secret: 'JBSWY3DPEHPK3PXP' })
      .execute();
    await migrateToLatest(t.db);
    expect((await t.db.selectFrom('users').select('otp_secret').executeTakeFirstOrThrow()).otp_secret).toBe(
      'JBSWY3DPEHPK3PXP',
    );
  });
});
