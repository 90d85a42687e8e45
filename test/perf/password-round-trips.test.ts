// How many round trips to PostgreSQL a password check takes (issue 30), counted on the real app
// over a recording database handle (every statement sent, BEGIN and COMMIT included). One
// statement reserves the attempt on the address and reads the user the login names (two before);
// the next reserves it on that account (not in the same statement: locking the counter and the
// user's row at once deadlocked with settlements under 50 concurrent sign-ins); a right password
// then settles the reservations and the grant issues its token. The guarantees
// it must keep (refusals alike, locks, limits under concurrency) are pinned by
// test/web/rate-limit.test.ts and test/attack/brute-force-concurrency.test.ts.
import type { FastifyInstance } from 'fastify';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { resetDatabase } from '../support/db';
import { type CountingDb, countingDb } from '../support/statement-counter';
import { form, FORM, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let counter: CountingDb;
let app: FastifyInstance;

beforeAll(async () => {
  counter = countingDb(f.handle);
  app = await buildApp({ db: counter.db, config: f.config, logger: false });
  return () => app.close();
});

beforeEach(async () => {
  await resetDatabase(f.db);
  await makeUser(f.db, 'alice');
  await makeUser(f.db, 'bob', { blocked: true });
});

/** A password grant, with the statements it sent. */
async function grant(username: string, password: string) {
  counter.reset();
  const res = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: FORM,
    payload: form({ grant_type: 'password', username, password }),
  });
  return { res, sent: [...counter.statements] };
}

const failures = async () =>
  (await f.db.selectFrom('users').select(['username', 'failed_attempts']).orderBy('username').execute()).map(
    (u) => `${u.username}:${u.failed_attempts}`,
  );
const addressCount = async () =>
  (await f.db.selectFrom('rate_limit_counters').select('count').executeTakeFirst())?.count ?? 0;

describe('round trips of the password grant', () => {
  it('the right password: 4 statements (admission with the user, the account, settlement, the token)', async () => {
    const { res, sent } = await grant('Alice', PASSWORD);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ token_type: 'bearer', scope: 'api read_api read_user' });
    expect(sent).toHaveLength(4);
    // One statement: the address's counter and the user by login; it locks no user row.
    expect(sent[0]).toMatch(/^with found as \(select "id", "username"/);
    expect(sent[0]).toMatch(/insert into rate_limit_counters/);
    expect(sent[0]).not.toMatch(/update users/);
    expect(sent[1]).toMatch(/^update users set failed_attempts/);
    expect(sent[2]).toMatch(/delete from rate_limit_counters/);
    expect(sent[3]).toMatch(/^insert into "oauth_access_tokens"/);
    // Settled: no failure left on the account or the address.
    expect(await failures()).toEqual(['alice:0', 'bob:0']);
    expect(await addressCount()).toBe(0);
    // The same statement text the next time: a prepared statement, built once.
    const again = await grant('alice@example.com', PASSWORD);
    expect(again.res.statusCode).toBe(200);
    expect(again.sent[0]).toBe(sent[0]);
  });

  it('a wrong password: 2 statements; an unknown user: 1; the failure counted where it belongs', async () => {
    const wrong = await grant('alice', 'not the password');
    expect(wrong.res.statusCode).toBe(400);
    expect(wrong.res.json().error).toBe('invalid_grant');
    expect(wrong.sent).toHaveLength(2);
    expect(await failures()).toEqual(['alice:1', 'bob:0']);
    expect(await addressCount()).toBe(1);

    const unknown = await grant('nobody', PASSWORD);
    expect(unknown.res.statusCode).toBe(400);
    expect(unknown.res.json()).toEqual(wrong.res.json());
    expect(unknown.sent).toEqual([wrong.sent[0]]);
    expect(await failures()).toEqual(['alice:1', 'bob:0']);
    expect(await addressCount()).toBe(2);
  });

  it('the right password of a blocked user: 3 statements (admission, the account, settlement), no token', async () => {
    const { res, sent } = await grant('bob', PASSWORD);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_grant');
    expect(sent).toHaveLength(3);
    expect(await failures()).toEqual(['alice:0', 'bob:0']);
    expect(await addressCount()).toBe(0);
    expect(await f.db.selectFrom('oauth_access_tokens').select('id').execute()).toEqual([]);
  });

  it('a throttled address: 1 statement, and the account is not reserved', async () => {
    await f.db
      .insertInto('rate_limit_counters')
      .values({ key: 'failures:addr:127.0.0.1', count: 60, window_start: new Date() })
      .execute();
    const { res, sent } = await grant('alice', PASSWORD);
    expect(res.statusCode).toBe(429);
    expect(sent).toHaveLength(1);
    expect(await failures()).toEqual(['alice:0', 'bob:0']);
    expect(await addressCount()).toBe(60);
  });
});
