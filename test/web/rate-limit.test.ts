// Brute-force limits (contract §2): 10 consecutive failures lock an account for 10 minutes (the
// right password then fails too, with the same generic error); more than 60 failures a minute
// from one address → 429 with Retry-After; successful requests never count. Sign-in form,
// password grant and client secrets share the counters, kept in PostgreSQL.
import { beforeEach, describe, expect, it } from 'vitest';
import { reserveAccountAttempt, settleSuccess } from '../../service/domain/rate-limit';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { errorBody } from '../oauth/support/contract';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
beforeEach(() => resetDatabase(f.db));

const passwordGrant = (username: string, password: string, remoteAddress = '198.51.100.7') =>
  f.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: FORM,
    remoteAddress,
    payload: form({ grant_type: 'password', username, password }),
  });

describe('per account', () => {
  it('10 consecutive failures lock the account for 10 minutes; the right password then fails with the same error', async () => {
    await makeUser(f.db, 'alice');
    // Failures spread over addresses and both entry points: the account counter is the user's.
    for (let i = 0; i < 9; i++)
      expect((await passwordGrant('alice', `wrong-${i}`, `203.0.113.${i}`)).statusCode).toBe(400);
    const web = new WebClient(f.app);
    expect((await web.signIn('alice', 'wrong-9')).statusCode).toBe(401);
    const user = await f.db.selectFrom('users').select(['locked_until', 'failed_attempts']).executeTakeFirstOrThrow();
    expect(Math.round((user.locked_until!.getTime() - Date.now()) / 1000)).toBeGreaterThan(590);

    const locked = await passwordGrant('alice', PASSWORD);
    expect({ status: locked.statusCode, body: locked.json() }).toEqual({
      status: 400,
      body: errorBody('invalid_grant'),
    });
    const form2 = await new WebClient(f.app).signIn('alice', PASSWORD);
    expect(form2.statusCode).toBe(401);
    expect(form2.body).toContain('Invalid login or password.');

    // Ten minutes later the right password works again, and the count starts over.
    await f.db
      .updateTable('users')
      .set({ locked_until: new Date(Date.now() - 1000) })
      .execute();
    expect((await passwordGrant('alice', PASSWORD)).statusCode).toBe(200);
    expect(
      await f.db.selectFrom('users').select(['failed_attempts', 'locked_until']).executeTakeFirstOrThrow(),
    ).toEqual({ failed_attempts: 0, locked_until: null });
  });

  it('a success resets the count: failures must be consecutive', async () => {
    await makeUser(f.db, 'alice');
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 9; i++) await passwordGrant('alice', 'wrong');
      expect((await passwordGrant('alice', PASSWORD)).statusCode).toBe(200);
    }
    expect((await f.db.selectFrom('users').select('locked_until').executeTakeFirstOrThrow()).locked_until).toBeNull();
  });

  it('wrong TOTP codes count too', async () => {
    await makeUser(f.db, 'carol', { twoFactor: true });
    for (let i = 0; i < 10; i++) {
      const res = await new WebClient(f.app).signIn('carol', PASSWORD, () => '000000');
      expect(res.statusCode).toBe(401);
    }
    expect(
      (await f.db.selectFrom('users').select('locked_until').executeTakeFirstOrThrow()).locked_until,
    ).not.toBeNull();
  });
});

describe('per client address', () => {
  it('more than 60 failures a minute → 429 with Retry-After (form and password grant); other addresses unaffected', async () => {
    await makeUser(f.db, 'alice');
    const ip = '192.0.2.50';
    for (let i = 0; i < 60; i++) {
      // Unknown users: only the address counter moves. Successes in between never count.
      expect((await passwordGrant(`nobody${i}`, 'wrong', ip)).statusCode).toBe(400);
      if (i % 20 === 0) expect((await passwordGrant('alice', PASSWORD, ip)).statusCode).toBe(200);
    }
    const limited = await passwordGrant('alice', PASSWORD, ip);
    expect(limited.statusCode).toBe(429);
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);

    const web = new WebClient(f.app);
    const page = await web.get('/users/sign_in');
    const formLimited = await f.app.inject({
      method: 'POST',
      url: '/users/sign_in',
      remoteAddress: ip,
      headers: { ...FORM, cookie: web.cookieHeader },
      payload: form({
        authenticity_token: WebClient.csrf(page.body),
        'user[login]': 'alice',
        'user[password]': PASSWORD,
      }),
    });
    expect(formLimited.statusCode).toBe(429);
    expect(Number(formLimited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(formLimited.headers['content-type']).toBe('text/html; charset=utf-8');

    // Another address is not affected.
    expect((await passwordGrant('alice', PASSWORD, '192.0.2.51')).statusCode).toBe(200);
    // The window passes: allowed again.
    await f.db
      .updateTable('rate_limit_counters')
      .set({ window_start: new Date(Date.now() - 61_000) })
      .execute();
    expect((await passwordGrant('alice', PASSWORD, ip)).statusCode).toBe(200);
  });

  it('wrong client secrets count as failures of the address', async () => {
    const app = await makeApp(f.db);
    const ip = '192.0.2.60';
    const attempt = () =>
      f.app.inject({
        method: 'POST',
        url: '/oauth/token',
        remoteAddress: ip,
        headers: { ...FORM, authorization: basic(app.clientId, 'gloas-guess') },
        payload: form({ grant_type: 'refresh_token', refresh_token: 'x' }),
      });
    for (let i = 0; i < 60; i++) expect((await attempt()).statusCode).toBe(401);
    const res = await attempt();
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBeDefined();
  });

  it('concurrent failures all count (one atomic upsert)', async () => {
    const ip = '192.0.2.70';
    await Promise.all(Array.from({ length: 30 }, (_, i) => passwordGrant(`ghost${i}`, 'wrong', ip)));
    const row = await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).executeTakeFirstOrThrow();
    expect(row).toEqual({ key: `failures:addr:${ip}`, count: 30 });
  });
});

describe('reserve → verify → settle (the account counter)', () => {
  it('a success clears the failures reserved before it, never one reserved after it started', async () => {
    const { user } = await makeUser(f.db, 'alice');
    const earlier = await reserveAccountAttempt(f.db, user.id); // a guess already under way: fails
    const mine = await reserveAccountAttempt(f.db, user.id); // the right password, being checked
    const later = [await reserveAccountAttempt(f.db, user.id), await reserveAccountAttempt(f.db, user.id)];
    expect([earlier, mine, ...later].every((t) => t !== undefined)).toBe(true);
    await settleSuccess(f.db, { windows: [], account: mine }, { clearAccount: true });
    expect(
      await f.db.selectFrom('users').select(['failed_attempts', 'locked_until']).executeTakeFirstOrThrow(),
    ).toEqual({
      failed_attempts: 2,
      locked_until: null,
    });
    // The earlier one was cleared with it: a success of it now changes nothing.
    await settleSuccess(f.db, { windows: [], account: earlier }, { clearAccount: true });
    expect((await f.db.selectFrom('users').select('failed_attempts').executeTakeFirstOrThrow()).failed_attempts).toBe(
      2,
    );
  });

  it('attempts still in flight hold the lock: the 11th is refused before its credential is checked', async () => {
    const { user } = await makeUser(f.db, 'alice');
    const inFlight = [];
    for (let i = 0; i < 10; i++) inFlight.push(await reserveAccountAttempt(f.db, user.id));
    expect(await reserveAccountAttempt(f.db, user.id)).toBeUndefined();
    // One of them turns out right: its own reservation and the ones before it are released.
    await settleSuccess(f.db, { windows: [], account: inFlight[4] }, { clearAccount: true });
    expect(
      await f.db.selectFrom('users').select(['failed_attempts', 'locked_until']).executeTakeFirstOrThrow(),
    ).toEqual({
      failed_attempts: 5,
      locked_until: null,
    });
    expect(await reserveAccountAttempt(f.db, user.id)).toBeDefined();
  });
});
