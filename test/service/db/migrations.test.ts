import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrateToLatest, migrationStatus } from '../../../service/db/migrator';
import { migrateDownToEmpty } from '../../support/db';
import { migrations } from '../../../migrations';
import { createTestDatabase } from '../../support/db';

const TABLES = [
  'audit_events',
  'backchannel_logout_deliveries',
  'dpop_proofs',
  'groups',
  'mail_outbox',
  'mail_suppressions',
  'members',
  'notification_event_recipients',
  'notification_events',
  'notification_settings',
  'notification_subscriptions',
  'oauth_access_tokens',
  'oauth_applications',
  'oauth_authorization_codes',
  'oauth_device_grants',
  'password_reset_tokens',
  'personal_access_tokens',
  'projects',
  'rate_limit_counters',
  'user_emails',
  'user_recovery_codes',
  'users',
  'web_sessions',
  'webauthn_challenges',
  'webauthn_credentials',
];

async function tables(db: any): Promise<string[]> {
  const { rows } = await sql<{ t: string }>`
    select tablename as t from pg_tables where schemaname = 'public' and tablename not like 'kysely_%' order by 1`.execute(
    db,
  );
  return rows.map((r) => r.t);
}

describe('migrations', () => {
  it('round-trips: empty → latest → schema as expected → empty → latest', async () => {
    const t = await createTestDatabase({ max: 1 });
    // The template is already migrated: go down to empty first.
    await migrateDownToEmpty(t.db);
    expect(await tables(t.db)).toEqual([]);
    expect(await migrationStatus(t.db)).toEqual({ applied: [], pending: Object.keys(migrations) });

    const result = await migrateToLatest(t.db);
    expect(result.newlyApplied).toEqual(Object.keys(migrations));
    expect(result.pending).toEqual([]);
    expect(await tables(t.db)).toEqual(TABLES);

    // Secrets are stored as digests: no plaintext token/secret/code columns exist.
    const { rows: cols } = await sql<{ c: string }>`
      select table_name || '.' || column_name as c from information_schema.columns
      where table_schema = 'public' and column_name ~ '(token|secret|code|password)' order by 1`.execute(t.db);
    expect(cols.map((r) => r.c)).toEqual([
      'oauth_access_tokens.authorization_code_id',
      'oauth_access_tokens.refresh_token_digest',
      'oauth_access_tokens.token_digest',
      // RFC 9449 §5.2: a flag (an application requires DPoP), not a secret.
      'oauth_applications.dpop_bound_access_tokens',
      // RFC 7592's registration access token (looked up by client_id, compared in constant time).
      'oauth_applications.registration_access_token_digest',
      'oauth_applications.secret_digest',
      'oauth_authorization_codes.code_challenge',
      'oauth_authorization_codes.code_challenge_method',
      'oauth_authorization_codes.code_digest',
      'oauth_device_grants.device_code_digest',
      'oauth_device_grants.user_code_digest',
      'password_reset_tokens.token_digest',
      // A link to the token a rotation replaced (an id, not a secret).
      'personal_access_tokens.previous_personal_access_token_id',
      'personal_access_tokens.token_digest',
      'user_recovery_codes.code_digest',
      'users.otp_secret',
      'users.password_hash',
    ]);

    // Token look-ups are single indexed queries.
    const { rows: idx } = await sql<{ i: string }>`
      select indexdef as i from pg_indexes where schemaname = 'public' and indexdef ~ '(token_digest|code_digest)' order by 1`.execute(
      t.db,
    );
    expect(idx.map((r) => r.i.replace(/^.* ON public\./, ''))).toEqual([
      'oauth_device_grants USING btree (user_code_digest)',
      'oauth_access_tokens USING btree (refresh_token_digest)',
      'oauth_access_tokens USING btree (token_digest)',
      'oauth_authorization_codes USING btree (code_digest)',
      'oauth_device_grants USING btree (device_code_digest)',
      'password_reset_tokens USING btree (token_digest)',
      'personal_access_tokens USING btree (token_digest)',
      'user_recovery_codes USING btree (user_id, code_digest)',
    ]);

    // Deleting a row never scans a table: the ON DELETE action of a foreign key queries the
    // referencing columns, once per deleted row, so an index must lead with them. The exceptions
    // name users, which are blocked, never deleted.
    const { rows: unindexed } = await sql<{ k: string }>`
      select c.conrelid::regclass || '(' || (
          select string_agg(a.attname, ', ' order by a.attnum) from pg_attribute a
          where a.attrelid = c.conrelid and a.attnum = any(c.conkey)
        ) || ') -> ' || c.confrelid::regclass as k
      from pg_constraint c
      where c.contype = 'f' and not exists (
        select from pg_index i where i.indrelid = c.conrelid
          and (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey
          and (i.indkey::int2[])[0:cardinality(c.conkey) - 1] <@ c.conkey)
      order by 1`.execute(t.db);
    expect(unindexed.map((r) => r.k)).toEqual([
      'notification_event_recipients(user_id) -> users',
      'notification_events(author_id) -> users',
      'oauth_authorization_codes(user_id) -> users',
      'webauthn_challenges(user_id) -> users',
    ]);

    // A second run is a no-op.
    expect((await migrateToLatest(t.db)).newlyApplied).toEqual([]);

    await migrateDownToEmpty(t.db);
    expect(await tables(t.db)).toEqual([]);
    await migrateToLatest(t.db);
    expect(await tables(t.db)).toEqual(TABLES);
  });

  it('enforces case-insensitive uniqueness of usernames and e-mails', async () => {
    const t = await createTestDatabase({ max: 1 });
    await t.db.insertInto('users').values({ username: 'Alice', email: 'alice@example.com', name: 'Alice' }).execute();
    await expect(
      t.db.insertInto('users').values({ username: 'alice', email: 'other@example.com', name: 'A' }).execute(),
    ).rejects.toMatchObject({ code: '23505', constraint: 'users_username_lower' });
    await expect(
      t.db.insertInto('users').values({ username: 'bob', email: 'ALICE@example.com', name: 'B' }).execute(),
    ).rejects.toMatchObject({ code: '23505', constraint: 'users_email_lower' });
  });

  it('applies concurrently from two processes without error (migration lock)', async () => {
    const t = await createTestDatabase({ max: 4 });
    await migrateDownToEmpty(t.db);
    const [a, b] = await Promise.all([migrateToLatest(t.db), migrateToLatest(t.db)]);
    expect([...a.newlyApplied, ...b.newlyApplied]).toEqual(Object.keys(migrations));
    expect(await tables(t.db)).toEqual(TABLES);
  });
});
