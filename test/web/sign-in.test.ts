// /users/sign_in and /users/sign_out: password and TOTP steps, blocked users, account lock,
// per-address rate limit, CSRF, cookies, session fixation, no open redirect, key rotation.
import { beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { sha256Hex } from '../../service/domain/secrets';
import { rotateSessionKey } from '../../service/domain/service-keys';
import { serviceKeyFileStore } from '../../service/local/service-key-file';
import { safeReturnTo } from '../../service/pages/current-user';
import { testConfig } from '../support/app';
import { totp } from '../support/totp';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { form, FORM, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
beforeEach(() => resetDatabase(f.db, ['service_keys']));

const signedInAs = async (web: WebClient) => {
  const res = await web.get('/profile/applications');
  return res.statusCode === 200 ? /id="signed-in-user">([^<]+)</.exec(res.body)?.[1] : undefined;
};

describe('sign-in form', () => {
  it('signs in by username or e-mail; cookie HttpOnly, SameSite=Lax, not Secure over http; a new session id', async () => {
    await makeUser(f.db, 'alice');
    for (const login of ['alice', 'ALICE@example.com']) {
      const web = new WebClient(f.app);
      const page = await web.get('/users/sign_in');
      expect(page.statusCode).toBe(200);
      expect(page.headers['x-frame-options']).toBe('DENY');
      expect(page.body).toContain('name="user[login]"');
      expect(page.body).toContain('name="user[password]"');
      const cookie = String(page.headers['set-cookie']);
      // Before sign-in the cookie is the whole (anonymous) session: nonce, expiry, data, HMAC.
      expect(cookie).toMatch(
        /^_lanyard_session=[0-9a-f]{32}\.\d+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{43}; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/,
      );
      const before = web.cookies.get('_lanyard_session');
      const res = await web.post('/users/sign_in', {
        authenticity_token: WebClient.csrf(page.body),
        'user[login]': login,
        'user[password]': PASSWORD,
      });
      expect(res.statusCode).toBe(302);
      expect(res.headers.location).toBe('/-/profile');
      expect(web.cookies.get('_lanyard_session')).not.toBe(before); // no session fixation
      // Signed in: a random id (its digest is the web_sessions row) and its HMAC.
      expect(web.cookies.get('_lanyard_session')).toMatch(/^[0-9a-f]{64}\.[A-Za-z0-9_-]{43}$/);
      expect(await signedInAs(web)).toBe('alice');
    }
    const users = await f.db.selectFrom('users').select(['current_sign_in_at']).execute();
    expect(users[0].current_sign_in_at).not.toBeNull();
  });

  it('the cookie is Secure when the public URL is https', async () => {
    const app = await buildApp({
      db: f.db,
      config: testConfig({ publicUrl: 'https://lanyard.example.com', secureCookies: true }),
      logger: false,
    });
    const res = await app.inject({ url: '/users/sign_in' });
    expect(String(res.headers['set-cookie'])).toMatch(/; HttpOnly; Secure; SameSite=Lax$/);
    await app.close();
  });

  it('wrong password, unknown user, blocked user: the same generic message', async () => {
    await makeUser(f.db, 'alice');
    await makeUser(f.db, 'bob', { blocked: true });
    const bodies = new Set<string>();
    for (const [login, password] of [
      ['alice', 'nope-nope'],
      ['nobody', PASSWORD],
      ['bob', PASSWORD],
    ]) {
      const web = new WebClient(f.app);
      const res = await web.signIn(login, password);
      expect(res.statusCode).toBe(401);
      expect(res.body).toContain('Invalid login or password.');
      bodies.add(/id="flash-alert">([^<]*)</.exec(res.body)![1]);
      expect(await signedInAs(web)).toBeUndefined();
    }
    expect(bodies.size).toBe(1);
  });

  it('2FA: the password step leads to a TOTP step; a used code cannot be replayed', async () => {
    const { otpSecret } = await makeUser(f.db, 'carol', { twoFactor: true });
    const web = new WebClient(f.app);
    const page = await web.get('/users/sign_in');
    const step1 = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(page.body),
      'user[login]': 'carol',
      'user[password]': PASSWORD,
    });
    // The password accepted: 303 to the sign-in page, which shows the second step (so Back and
    // reload repeat the GET, never the password).
    expect(step1.statusCode).toBe(303);
    expect(step1.headers.location).toBe('/users/sign_in');
    const step = await web.get('/users/sign_in');
    expect(step.statusCode).toBe(200);
    expect(step.body).toContain('name="user[otp_attempt]"');
    expect(step.body).not.toContain('name="user[password]"');
    const reloaded = await web.get('/users/sign_in');
    expect(reloaded.body).toContain('name="user[otp_attempt]"');
    expect(await signedInAs(web)).toBeUndefined(); // not signed in after the password alone
    const wrong = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(step.body),
      'user[otp_attempt]': '000000' === totp(otpSecret!) ? '111111' : '000000',
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).toContain(
      '<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#user_otp_attempt">The code is not correct. Enter the code your authenticator app shows now, or an unused recovery code</a></li></ul>',
    );
    expect(wrong.body).toContain('aria-invalid="true" aria-describedby="user_otp_attempt-hint user_otp_attempt-error"');
    const code = totp(otpSecret!);
    const ok = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(wrong.body),
      'user[otp_attempt]': code,
    });
    expect(ok.statusCode).toBe(302);
    expect(await signedInAs(web)).toBe('carol');

    // The same code again, from another browser: refused (RFC 6238 §5.2).
    const web2 = new WebClient(f.app);
    const again = await web2.signIn('carol', PASSWORD, () => code);
    expect(again.statusCode).toBe(401);
    expect(await signedInAs(web2)).toBeUndefined();
  });

  it('the TOTP step alone (without the password step) gets nowhere', async () => {
    const { otpSecret } = await makeUser(f.db, 'carol', { twoFactor: true });
    const web = new WebClient(f.app);
    const page = await web.get('/users/sign_in');
    const res = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(page.body),
      'user[otp_attempt]': totp(otpSecret!),
    });
    expect(res.statusCode).toBe(401);
    expect(await signedInAs(web)).toBeUndefined();
  });

  it("CSRF: a post without the token, with a forged one, or with another session's token is refused (422)", async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    const page = await web.get('/users/sign_in');
    const other = new WebClient(f.app);
    const otherToken = WebClient.csrf((await other.get('/users/sign_in')).body);
    for (const token of [undefined, 'x', 'A'.repeat(43), otherToken]) {
      const res = await web.post('/users/sign_in', {
        authenticity_token: token,
        'user[login]': 'alice',
        'user[password]': PASSWORD,
      });
      expect(res.statusCode).toBe(422);
    }
    // No session cookie at all.
    const bare = await f.app.inject({
      method: 'POST',
      url: '/users/sign_in',
      headers: FORM,
      payload: form({
        authenticity_token: WebClient.csrf(page.body),
        'user[login]': 'alice',
        'user[password]': PASSWORD,
      }),
    });
    expect(bare.statusCode).toBe(422);
    expect(await signedInAs(web)).toBeUndefined();
  });

  it('rotating the session key signs nobody out, and forms keep working', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    await web.signIn('alice', PASSWORD);
    const page = await web.get('/users/sign_out');
    await rotateSessionKey(f.db, serviceKeyFileStore(f.config.home));
    // The app caches the ring: a value signed with the new key must still verify (refresh on miss).
    const fresh = new WebClient(f.app);
    expect((await fresh.signIn('alice', PASSWORD)).statusCode).toBe(302);
    expect(await signedInAs(web)).toBe('alice');
    expect(await signedInAs(fresh)).toBe('alice');
    expect((await web.post('/users/sign_out', { authenticity_token: WebClient.csrf(page.body) })).statusCode).toBe(302);
    expect(await signedInAs(web)).toBeUndefined();
  });

  it('a key rotated in by another instance: this instance reloads its cached ring on a miss', async () => {
    await makeUser(f.db, 'alice');
    const a = new WebClient(f.app);
    await a.get('/users/sign_in'); // instance A has loaded (and caches) the ring
    await rotateSessionKey(f.db, serviceKeyFileStore(f.config.home));
    await new Promise((r) => setTimeout(r, 1100)); // A reloads at most once a second
    const instanceB = await buildApp({ db: f.db, config: testConfig(), logger: false });
    try {
      const b = new WebClient(instanceB);
      expect((await b.signIn('alice', PASSWORD)).statusCode).toBe(302); // signed with the new key
      const onA = new WebClient(f.app);
      onA.cookies = new Map(b.cookies);
      expect(await signedInAs(onA)).toBe('alice');
    } finally {
      await instanceB.close();
    }
  });

  it('a tampered or unsigned session cookie is ignored', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    await web.signIn('alice', PASSWORD);
    const [id, sig] = web.cookies.get('_lanyard_session')!.split('.');
    web.cookies.set('_lanyard_session', `${id}.${sig.slice(0, -2)}AA`);
    expect(await signedInAs(web)).toBeUndefined();
    web.cookies.set('_lanyard_session', id);
    expect(await signedInAs(web)).toBeUndefined();
  });
});

describe('after sign-in: back where the user was going, only to our own paths', () => {
  it('returns to the page that asked for sign-in', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    const res = await web.get('/profile/applications?x=1');
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/users/sign_in');
    expect((await web.signIn('alice', PASSWORD)).headers.location).toBe('/profile/applications?x=1');
  });

  it('never to another host (//evil, /\\evil, absolute URLs)', async () => {
    for (const bad of [
      '//evil.example/x',
      '/\\evil.example',
      'https://evil.example/',
      'javascript:alert(1)',
      '/\t/evil.example',
      '',
      undefined,
      42,
    ]) {
      expect(safeReturnTo(bad)).toBeUndefined();
    }
    expect(safeReturnTo('/oauth/authorize?client_id=a&redirect_uri=https%3A%2F%2Fx')).toBe(
      '/oauth/authorize?client_id=a&redirect_uri=https%3A%2F%2Fx',
    );
    // And through the app: a crafted return_to in the session cannot leave the site.
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    await web.get('/users/sign_in');
    const id = web.cookies.get('_lanyard_session')!.split('.')[0];
    await f.db
      .updateTable('web_sessions')
      .set({ data: JSON.stringify({ return_to: '//evil.example/' }) })
      .where('id_digest', '=', sha256Hex(id))
      .execute();
    expect((await web.signIn('alice', PASSWORD)).headers.location).toBe('/-/profile');
  });
});

describe('sign-out', () => {
  it('GET shows a form; POST with CSRF signs out and deletes the session row', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    await web.signIn('alice', PASSWORD);
    const page = await web.get('/users/sign_out');
    expect(page.statusCode).toBe(200);
    expect((await web.post('/users/sign_out', {})).statusCode).toBe(422);
    expect(await signedInAs(web)).toBe('alice');
    const res = await web.post('/users/sign_out', { authenticity_token: WebClient.csrf(page.body) });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/users/sign_in');
    expect(await f.db.selectFrom('web_sessions').select('user_id').where('user_id', 'is not', null).execute()).toEqual(
      [],
    );
  });

  it('a user blocked after signing in is signed out on the next request', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    await web.signIn('alice', PASSWORD);
    await f.db.updateTable('users').set({ state: 'blocked' }).execute();
    expect(await signedInAs(web)).toBeUndefined();
  });
});
