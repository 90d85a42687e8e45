// Migration 0032 (a refresh chain names its authorization code on its first token only): rows
// refreshed from that token lose their copy of the code's id, the first token keeps it, and the
// code-id index holds only rows that name a code; down gives each refreshed row its copy back.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../../migrations';
import { createMigrator, migrateToLatest } from '../../../service/db/migrator';
import { createTestDatabase } from '../../support/db';

const NAME = '0032-token-code-on-chain-root';

describe('migration 0032-token-code-on-chain-root', () => {
  it("refreshed rows reach the code through their chain's first token; down copies it back", async () => {
    const t = await createTestDatabase({ max: 1 });
    const names = Object.keys(migrations);
    const before = names[names.indexOf(NAME) - 1];
    expect((await createMigrator(t.db).migrateTo(before)).error).toBeUndefined();

    await sql`
      with u as (insert into users (username, email, name) values ('alice', 'alice@example.com', 'Alice') returning id),
      a as (
        insert into oauth_applications (uid, secret_digest, name, redirect_uris, scopes)
        values (repeat('a', 64), repeat('0', 64), 'App', array['https://app.example/cb'], array['api'])
        returning id
      ),
      c as (
        insert into oauth_authorization_codes (application_id, user_id, code_digest, redirect_uri, scopes, expires_at)
        select a.id, u.id, repeat('c', 64), 'https://app.example/cb', array['api'], now() from a, u
        returning id, application_id, user_id
      ),
      first as (
        insert into oauth_access_tokens (application_id, user_id, token_digest, scopes, expires_at, authorization_code_id)
        select application_id, user_id, 'first', array['api'], now(), id from c
        returning id, application_id, user_id, authorization_code_id
      )
      insert into oauth_access_tokens
        (application_id, user_id, token_digest, scopes, expires_at, authorization_code_id, parent_id, family_id)
      select application_id, user_id, 'second', array['api'], now(), authorization_code_id, id, id from first
    `.execute(t.db);
    const codeIds = () =>
      t.db
        .selectFrom('oauth_access_tokens')
        .select(['token_digest', 'authorization_code_id'])
        .orderBy('token_digest')
        .execute();
    const [{ id: codeId }] = await t.db.selectFrom('oauth_authorization_codes').select('id').execute();

    expect((await migrateToLatest(t.db)).newlyApplied).toContain(NAME);
    expect(await codeIds()).toEqual([
      { token_digest: 'first', authorization_code_id: codeId },
      { token_digest: 'second', authorization_code_id: null },
    ]);
    const { rows } = await sql<{ indexdef: string }>`
      select indexdef from pg_indexes where indexname = 'oauth_access_tokens_authorization_code_id'`.execute(t.db);
    expect(rows.map((r) => r.indexdef)).toEqual([
      'CREATE INDEX oauth_access_tokens_authorization_code_id ON public.oauth_access_tokens USING btree (authorization_code_id) WHERE (authorization_code_id IS NOT NULL)',
    ]);

    expect((await createMigrator(t.db).migrateTo(before)).error).toBeUndefined();
    expect(await codeIds()).toEqual([
      { token_digest: 'first', authorization_code_id: codeId },
      { token_digest: 'second', authorization_code_id: codeId },
    ]);
  });
});
