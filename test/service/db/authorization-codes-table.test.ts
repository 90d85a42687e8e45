// oauth_authorization_codes on real PostgreSQL (migration 0033): its limits are column types,
// checked where a value is written, not CHECK constraints that every insert re-prepares and every
// exchange's used_at stamp re-evaluates. Bad values are refused and leave no row.
import { sql } from 'kysely';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../service/db/schema';
import { registerApplication } from '../../../service/domain/applications';
import { createAuthorizationCode } from '../../../service/domain/authorization-codes';
import { randomHex, sha256Hex } from '../../../service/domain/secrets';
import { makeUser } from '../../support/api-fixtures';
import { createTestDatabase, resetDatabase } from '../../support/db';

let db: Db;
let userId: number;
let applicationId: number;
beforeAll(async () => {
  db = (await createTestDatabase()).db;
});
beforeEach(async () => {
  await resetDatabase(db);
  userId = (await makeUser(db, 'alice')).id;
  const { application } = await registerApplication(db, {
    name: 'App',
    redirectUris: ['https://app.example/cb'],
    scopes: ['api', 'openid'],
  });
  applicationId = application.id;
});

const insert = (values: Record<string, unknown>) =>
  db
    .insertInto('oauth_authorization_codes')
    .values({
      application_id: applicationId,
      user_id: userId,
      code_digest: sha256Hex(randomHex()),
      redirect_uri: 'https://app.example/cb',
      scopes: ['openid'],
      expires_at: new Date(Date.now() + 600_000),
      ...values,
    })
    .returning(['code_challenge_method', 'nonce', 'sid', 'dpop_jkt'])
    .executeTakeFirstOrThrow();

const count = async () =>
  Number((await sql<{ n: string }>`select count(*) as n from oauth_authorization_codes`.execute(db)).rows[0].n);

describe('oauth_authorization_codes', () => {
  it('has no CHECK constraints: an exchange stamping used_at evaluates none', async () => {
    const { rows } = await sql<{ conname: string }>`
      select conname from pg_constraint
      where conrelid = 'oauth_authorization_codes'::regclass and contype = 'c'`.execute(db);
    expect(rows).toEqual([]);
  });

  it('keeps the values at their limits, and reads the method back as text', async () => {
    const row = await insert({
      code_challenge: 'c'.repeat(43),
      code_challenge_method: 'plain',
      nonce: 'n'.repeat(1024),
      sid: 's'.repeat(64),
      dpop_jkt: 'j'.repeat(64),
    });
    expect(row).toEqual({
      code_challenge_method: 'plain',
      nonce: 'n'.repeat(1024),
      sid: 's'.repeat(64),
      dpop_jkt: 'j'.repeat(64),
    });
    // Limits count characters, as length() did.
    expect((await insert({ nonce: 'é'.repeat(1024) })).nonce).toBe('é'.repeat(1024));
  });

  it.each([
    ['a nonce over 1,024 characters', { nonce: 'n'.repeat(1025) }, '22001'],
    ['a sid over 64 characters', { sid: 's'.repeat(65) }, '22001'],
    ['a dpop_jkt over 64 characters', { dpop_jkt: 'j'.repeat(65) }, '22001'],
    ['an unknown PKCE method', { code_challenge: 'c'.repeat(43), code_challenge_method: 'S512' }, '22P02'],
    ['a lower-case method', { code_challenge: 'c'.repeat(43), code_challenge_method: 's256' }, '22P02'],
  ])('refuses %s and stores nothing', async (_what, values, code) => {
    await expect(insert(values)).rejects.toMatchObject({ code });
    expect(await count()).toBe(0);
  });

  it('stores no method without a challenge (the one writer pairs them)', async () => {
    const { code } = await createAuthorizationCode(db, {
      applicationId,
      userId,
      redirectUri: 'https://app.example/cb',
      scopes: ['api'],
      codeChallengeMethod: 'S256',
    });
    const row = await db
      .selectFrom('oauth_authorization_codes')
      .select(['code_challenge', 'code_challenge_method'])
      .where('code_digest', '=', sha256Hex(code))
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ code_challenge: null, code_challenge_method: null });
  });
});
