// The attack suite, part 3 (issue 22, "every brute-force limit is check-then-act"): 50 guesses at
// once on every limit of contract §2 "Brute-force limits" — the account lock (password grant,
// sign-in form, TOTP codes, recovery codes), the per-address limit, client secrets and device
// user codes. No more guesses are evaluated than the limit allows: counted by the answers (at most
// N that are not 429) and by the counters in the database; a right credential sent after the
// threshold gets nothing.
import { beforeEach, describe, expect, it } from 'vitest';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { errorBody } from '../oauth/support/contract';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const N = 50;
const f = useFixture({ max: 20 });
beforeEach(() => resetDatabase(f.db));

const ADDRESS = '198.51.100.23';
const passwordGrant = (username: string, password: string, remoteAddress = ADDRESS) =>
  f.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: FORM,
    remoteAddress,
    payload: form({ grant_type: 'password', username, password }),
  });

/** `N` attempts at once: wrong ones, and the right one last (after the threshold). */
const atOnce = <T>(attempt: (i: number, last: boolean) => Promise<T>) =>
  Promise.all(Array.from({ length: N }, (_, i) => attempt(i, i === N - 1)));

const tally = (statuses: number[]) => {
  const counts = new Map<number, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  return Object.fromEntries([...counts].sort(([a], [b]) => a - b));
};

const account = (username: string) =>
  f.db
    .selectFrom('users')
    .select(['failed_attempts', 'locked_until'])
    .where('username', '=', username)
    .executeTakeFirstOrThrow();

/** The account holds exactly the 10 failures the lock allows, and is locked for 10 minutes. */
/** The sign-in form posted from ADDRESS in this browser session. */
const postSignIn = (web: WebClient, fields: Record<string, string>) =>
  f.app.inject({
    method: 'POST',
    url: '/users/sign_in',
    remoteAddress: ADDRESS,
    headers: { ...FORM, cookie: web.cookieHeader },
    payload: form(fields),
  });

/** A two-factor user's right password posted: the session now at the code step (200). */
async function atTwoFactorStep(username: string) {
  const web = new WebClient(f.app);
  const step = await web.secondStep(username, PASSWORD);
  expect(step.statusCode).toBe(200);
  return { web, step };
}

async function expectLockedAfterTen(username: string) {
  const row = await account(username);
  expect(row.failed_attempts).toBe(10);
  expect(row.locked_until).not.toBeNull();
  expect(Math.round((row.locked_until!.getTime() - Date.now()) / 1000)).toBeGreaterThan(590);
}

/** Put an address `count` failures into its window (as earlier failures would have). */
const preload = (key: string, count: number) =>
  f.db.insertInto('rate_limit_counters').values({ key, window_start: new Date(), count }).execute();

describe(`${N} concurrent guesses on the account lock (10 consecutive failures)`, () => {
  it('password grant from one address: 49 wrong and then the right password → no token; 10 failures evaluated', async () => {
    await makeUser(f.db, 'alice');
    const responses = await atOnce((i, last) => passwordGrant('alice', last ? PASSWORD : `wrong-${i}`));
    const statuses = responses.map((r) => r.statusCode);
    console.log(`[attack] password grant ×${N}: ${JSON.stringify(tally(statuses))}`);
    expect(tally(statuses)).toEqual({ 400: N });
    for (const r of responses) expect(r.json()).toEqual(errorBody('invalid_grant'));
    await expectLockedAfterTen('alice');
    // The address saw every refusal as a failure (50 of its 60), and the account stays locked.
    expect((await passwordGrant('alice', PASSWORD)).statusCode).toBe(400);
    expect(
      await f.db.selectFrom('oauth_access_tokens').select('id').execute(),
      'no token was issued for the right password',
    ).toEqual([]);
  });

  it('sign-in form: 49 wrong and then the right password → never signed in; 10 failures evaluated', async () => {
    await makeUser(f.db, 'bob');
    const web = new WebClient(f.app);
    const csrf = WebClient.csrf((await web.get('/users/sign_in')).body);
    const responses = await atOnce((i, last) =>
      postSignIn(web, {
        authenticity_token: csrf,
        'user[login]': 'bob',
        'user[password]': last ? PASSWORD : `wrong-${i}`,
      }),
    );
    const statuses = responses.map((r) => r.statusCode);
    console.log(`[attack] sign-in form ×${N}: ${JSON.stringify(tally(statuses))}`);
    expect(tally(statuses)).toEqual({ 401: N });
    for (const r of responses) expect(r.body).toContain('Invalid login or password.');
    await expectLockedAfterTen('bob');
  });

  it('TOTP codes: 49 wrong and then the right code → never signed in; 10 failures evaluated', async () => {
    const carol = await makeUser(f.db, 'carol', { twoFactor: true });
    const { web, step } = await atTwoFactorStep('carol');
    // The right password of a two-factor user is no success yet: it clears nothing, counts nothing.
    expect(await account('carol')).toEqual({ failed_attempts: 0, locked_until: null });
    const csrf = WebClient.csrf(step.body);
    const right = carol.otp();
    const wrong = (i: number) => String((Number(right) + 1 + i) % 1_000_000).padStart(6, '0');
    const responses = await atOnce((i, last) =>
      postSignIn(web, { authenticity_token: csrf, 'user[otp_attempt]': last ? right : wrong(i) }),
    );
    const statuses = responses.map((r) => r.statusCode);
    console.log(`[attack] TOTP codes ×${N}: ${JSON.stringify(tally(statuses))}`);
    expect(tally(statuses)).toEqual({ 401: N });
    await expectLockedAfterTen('carol');
    // The right code was never evaluated: it was not spent (otp_last_step did not move to it).
    const { otp_last_step } = await f.db
      .selectFrom('users')
      .select('otp_last_step')
      .where('username', '=', 'carol')
      .executeTakeFirstOrThrow();
    expect(otp_last_step).toBeNull();
  });

  it('recovery codes: 49 wrong and then a real one → never signed in; the real code is not spent', async () => {
    await makeUser(f.db, 'dave', { twoFactor: true });
    const { web, step } = await atTwoFactorStep('dave');
    // A recovery code of dave's, planted by digest (the CLI enrolment shows none).
    const { createHash } = await import('node:crypto');
    const realCode = '0123456789abcdef';
    const { id } = await f.db.selectFrom('users').select('id').where('username', '=', 'dave').executeTakeFirstOrThrow();
    await f.db
      .insertInto('user_recovery_codes')
      .values({ user_id: id, code_digest: createHash('sha256').update(realCode).digest('hex') })
      .execute();
    const csrf = WebClient.csrf(step.body);
    const responses = await atOnce((i, last) =>
      postSignIn(web, {
        authenticity_token: csrf,
        'user[otp_attempt]': last ? realCode : `ffff${String(i).padStart(12, '0')}`,
      }),
    );
    const statuses = responses.map((r) => r.statusCode);
    console.log(`[attack] recovery codes ×${N}: ${JSON.stringify(tally(statuses))}`);
    expect(tally(statuses)).toEqual({ 401: N });
    await expectLockedAfterTen('dave');
    expect(await f.db.selectFrom('user_recovery_codes').select('used_at').execute()).toEqual([{ used_at: null }]);
  });
});

describe(`${N} concurrent guesses on the per-address limit (60 failures a minute)`, () => {
  it('password grant, 40 failures already counted: exactly 20 more are evaluated, 30 get 429 with Retry-After', async () => {
    await makeUser(f.db, 'erin');
    await preload(`failures:addr:${ADDRESS}`, 40);
    // Unknown users: only the address limit applies; the right password of a real user comes last.
    const responses = await atOnce((i, last) => passwordGrant(last ? 'erin' : `ghost${i}`, last ? PASSWORD : 'wrong'));
    const statuses = responses.map((r) => r.statusCode);
    console.log(`[attack] address limit ×${N}: ${JSON.stringify(tally(statuses))}`);
    expect(tally(statuses)).toEqual({ 400: 20, 429: 30 });
    expect(responses[N - 1].statusCode).toBe(429);
    for (const r of responses.filter((r) => r.statusCode === 429)) {
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers['retry-after'])).toBeLessThanOrEqual(60);
    }
    const counter = await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).execute();
    expect(counter).toEqual([{ key: `failures:addr:${ADDRESS}`, count: 60 }]);
  });

  // Both grants check a confidential client's secret inside their own statement (refresh rotation,
  // code spending): the limit must hold there as on the separate check.
  it.each([
    ['refresh_token', { grant_type: 'refresh_token', refresh_token: 'x' }],
    ['authorization_code', { grant_type: 'authorization_code', code: 'x', redirect_uri: 'https://app.example/cb' }],
  ])(
    'client secrets on %s, 40 failures already counted: 49 wrong and then the right secret → 20 × 401, 30 × 429',
    async (_grant, payload) => {
      const c = await makeApp(f.db);
      await preload(`failures:addr:${ADDRESS}`, 40);
      const responses = await atOnce((i, last) =>
        f.app.inject({
          method: 'POST',
          url: '/oauth/token',
          remoteAddress: ADDRESS,
          headers: { ...FORM, authorization: basic(c.clientId, last ? c.secret : `gloas-${'0'.repeat(63)}${i % 10}`) },
          payload: form(payload),
        }),
      );
      const statuses = responses.map((r) => r.statusCode);
      console.log(`[attack] client secrets (${_grant}) ×${N}: ${JSON.stringify(tally(statuses))}`);
      expect(tally(statuses)).toEqual({ 401: 20, 429: 30 });
      // The right secret, after the threshold, is refused without being compared.
      expect(responses[N - 1].statusCode).toBe(429);
      expect(responses[N - 1].json()).toEqual({
        error: 'slow_down',
        error_description: 'Too many failed attempts. Retry later.',
      });
      const counter = await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).execute();
      expect(counter).toEqual([{ key: `failures:addr:${ADDRESS}`, count: 60 }]);
    },
  );
});

describe(`${N} concurrent device user codes (5 wrong a minute per session)`, () => {
  it('49 wrong codes and then the right one → 5 evaluated (400), 45 × 429; the grant stays pending', async () => {
    await makeUser(f.db, 'frank');
    const pub = await makeApp(f.db, { name: 'CLI', confidential: false, scopes: 'api' });
    const device = await f.app.inject({
      method: 'POST',
      url: '/oauth/authorize_device',
      headers: FORM,
      payload: form({ client_id: pub.clientId }),
    });
    const { user_code } = device.json() as { user_code: string };
    const web = new WebClient(f.app);
    expect((await web.signIn('frank', PASSWORD)).statusCode).toBe(302);
    const csrf = WebClient.csrf((await web.get('/oauth/device')).body);
    const wrong = (i: number) => `BBBB${'CDFGHJKLMN'[i % 10]}${'CDFGHJKLMN'[Math.floor(i / 10)]}BB`;
    const responses = await atOnce((i, last) =>
      f.app.inject({
        method: 'POST',
        url: '/oauth/device',
        remoteAddress: ADDRESS,
        headers: { ...FORM, cookie: web.cookieHeader },
        payload: form({ authenticity_token: csrf, user_code: last ? user_code : wrong(i), decision: 'authorize' }),
      }),
    );
    const statuses = responses.map((r) => r.statusCode);
    console.log(`[attack] device user codes ×${N}: ${JSON.stringify(tally(statuses))}`);
    expect(tally(statuses)).toEqual({ 400: 5, 429: 45 });
    expect(responses[N - 1].statusCode).toBe(429);
    for (const r of responses.filter((r) => r.statusCode === 400))
      expect(r.body).toContain(
        '<a href="#user_code">That code is not right. Check the code shown on your device and enter it again</a>',
      );
    const grants = await f.db.selectFrom('oauth_device_grants').select(['status', 'user_id']).execute();
    expect(grants).toEqual([{ status: 'pending', user_id: null }]);
  });
});
