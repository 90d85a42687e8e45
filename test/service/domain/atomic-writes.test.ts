// Regression: domain writes and their audit events were two statements on the plain pool, so a
// failed audit insert left the change behind — for `rotateApplicationSecret` from
// /profile/applications that meant a dead old secret and a new one never shown. Each domain write
// is now one transaction (or part of the caller's). A trigger makes the audit insert fail for real.
import { sql } from 'kysely';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  registerApplication,
  rotateApplicationSecret,
  checkApplicationSecret,
} from '../../../service/domain/applications';
import { createGroup } from '../../../service/domain/namespaces';
import { createPersonalAccessToken } from '../../../service/domain/personal-access-tokens';
import { createUser, setUserPassword, setUserState } from '../../../service/domain/users';
import { verifyPassword } from '../../../service/domain/passwords';
import type { Db } from '../../../service/db/schema';
import { createTestDatabase, resetDatabase } from '../../support/db';

let db: Db;
beforeAll(async () => {
  db = (await createTestDatabase()).db;
});

const breakAudit = () =>
  sql`
    create or replace function lanyard_test_fail_audit() returns trigger language plpgsql as
      $$ begin raise exception 'audit log unavailable'; end $$;
    create trigger fail_audit before insert on audit_events for each row execute function lanyard_test_fail_audit();
  `.execute(db);

beforeEach(async () => {
  await sql`drop trigger if exists fail_audit on audit_events`.execute(db);
  await resetDatabase(db);
});

describe('a domain write whose audit event fails changes nothing', () => {
  it('rotateApplicationSecret: the old secret keeps working', async () => {
    const { application, secret } = await registerApplication(db, {
      name: 'App',
      redirectUris: ['https://a.example/cb'],
    });
    await breakAudit();
    await expect(rotateApplicationSecret(db, application.uid, 'user:alice')).rejects.toThrow(/audit log unavailable/);
    expect(await checkApplicationSecret(db, { uid: application.uid, secret, address: '192.0.2.1' })).toMatchObject({
      ok: true,
      application: { uid: application.uid },
    });
  });

  it('registerApplication, createUser, createGroup: no row is left behind', async () => {
    await breakAudit();
    await expect(registerApplication(db, { name: 'App', redirectUris: ['https://a.example/cb'] })).rejects.toThrow(
      /audit log unavailable/,
    );
    await expect(
      createUser(db, { username: 'bob', email: 'bob@example.com', password: 'long enough password' }),
    ).rejects.toThrow(/audit log unavailable/);
    await expect(createGroup(db, { path: 'acme' })).rejects.toThrow(/audit log unavailable/);
    expect(await db.selectFrom('oauth_applications').select('id').execute()).toEqual([]);
    expect(await db.selectFrom('users').select('id').execute()).toEqual([]);
    expect(await db.selectFrom('groups').select('id').execute()).toEqual([]);
  });

  it('setUserPassword, setUserState, createPersonalAccessToken: the user is unchanged', async () => {
    await createUser(db, { username: 'alice', email: 'alice@example.com', password: 'the first password' });
    await breakAudit();
    await expect(setUserPassword(db, 'alice', 'the second password')).rejects.toThrow(/audit log unavailable/);
    await expect(setUserState(db, 'alice', 'blocked')).rejects.toThrow(/audit log unavailable/);
    await expect(createPersonalAccessToken(db, { username: 'alice', name: 't', scopes: 'api' })).rejects.toThrow(
      /audit log unavailable/,
    );
    const user = await db.selectFrom('users').select(['password_hash', 'state']).executeTakeFirstOrThrow();
    expect(user.state).toBe('active');
    expect(await verifyPassword('the first password', user.password_hash)).toBe(true);
    expect(await db.selectFrom('personal_access_tokens').select('id').execute()).toEqual([]);
  });

  it('inside a caller transaction, the write joins it (one commit for the whole command)', async () => {
    await expect(
      db.transaction().execute(async (trx) => {
        await createGroup(trx, { path: 'acme' });
        await createGroup(trx, { path: 'acme/sub' }); // invalid path: the command fails as a whole
      }),
    ).rejects.toThrow(/invalid/);
    expect(await db.selectFrom('groups').select('id').execute()).toEqual([]);
  });
});
