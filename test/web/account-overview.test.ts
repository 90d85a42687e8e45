// The account overview (/-/profile, where signing in lands), the sign-in page's help (continue to
// <app>, focus, show password, someone else at the 2FA step), the recovery-code step (download,
// "I have saved them"), and the enrolment an administrator can require (`users set-2fa U on
// --require-enrolment`): after the password, nothing but the enrolment until it is done.
import { beforeEach, describe, expect, it } from 'vitest';
import { requireTwoFactorEnrolment } from '../../service/domain/users';
import { resetDatabase } from '../support/db';
import { totp } from '../support/totp';
import { authorizeUrl, WebClient } from '../oauth/support/browser-like';
import { FORM, form, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();

beforeEach(async () => {
  await resetDatabase(f.db);
});

const autofocused = (body: string) => /<input[^>]*\sid="([^"]+)"[^>]*\sautofocus/.exec(body)?.[1];
const text = (body: string, id: string) =>
  new RegExp(`id="${id}"[^>]*>([\\s\\S]*?)</(?:p|dd|strong|div)>`)
    .exec(body)?.[1]
    .replace(/<[^>]+>/g, '')
    .trim();

describe('the account overview', () => {
  it('signing in lands on /-/profile: name, username, e-mail, 2FA not enabled, links to every account page', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    const res = await web.signIn('alice', PASSWORD);
    expect([res.statusCode, res.headers.location]).toEqual([302, '/-/profile']);
    const page = await web.get('/-/profile');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<h1>Your account</h1>');
    expect(text(page.body, 'profile-username')).toBe('alice');
    expect(text(page.body, 'profile-email')).toBe('alice@example.com');
    expect(text(page.body, 'overview-two-factor')).toMatch(/^Not enabled\./);
    for (const href of [
      '/-/user_settings/active_sessions',
      '/profile/applications',
      '/-/user_settings/personal_access_tokens',
      '/-/profile/notifications',
      '/-/profile/emails',
      '/-/user_settings/password/edit',
    ])
      expect(page.body).toContain(`<a href="${href}">`);
    expect(page.body).toContain('<a href="/-/profile" aria-current="page">Overview</a>');
  });

  it('other e-mails: none shows no row; one and then three are counted, with a link to manage them', async () => {
    const { user } = await makeUser(f.db, 'carol');
    const web = new WebClient(f.app);
    await web.signIn('carol', PASSWORD);
    expect((await web.get('/-/profile')).body).not.toContain('profile-other-emails');
    const add = (email: string) =>
      f.db.insertInto('user_emails').values({ user_id: user.id, email, confirmed_at: new Date() }).execute();
    await add('carol@work.example');
    expect(text((await web.get('/-/profile')).body, 'profile-other-emails')).toBe('1 address (manage)');
    await add('carol@home.example');
    await add('carol@club.example');
    const page = await web.get('/-/profile');
    expect(text(page.body, 'profile-other-emails')).toBe('3 addresses (manage)');
    expect(page.body).toContain('<a href="/-/profile/emails">manage</a>');
  });

  it('two-factor on from the CLI with every recovery code used: a warning on the overview and the 2FA page', async () => {
    const { otp } = await makeUser(f.db, 'bob', { twoFactor: true });
    await f.db.updateTable('user_recovery_codes').set({ used_at: new Date() }).execute();
    const web = new WebClient(f.app);
    await web.signIn('bob', PASSWORD, () => otp());
    const page = await web.get('/-/profile');
    expect(page.body).toContain(
      '<p id="overview-two-factor"><strong>Enabled.</strong> 0 of 10 recovery codes remain unused.</p>',
    );
    expect(page.body).toContain('id="no-recovery-codes"');
    const twoFactor = await web.get('/-/profile/two_factor_auth');
    expect(twoFactor.body).toContain('id="no-recovery-codes"');
  });

  it('signed out: off to sign in', async () => {
    const res = await new WebClient(f.app).get('/-/profile');
    expect([res.statusCode, res.headers.location]).toEqual([302, '/users/sign_in']);
  });
});

describe('the sign-in page', () => {
  it('"Sign in to continue to <app>" when /oauth/authorize sent the person here', async () => {
    const c = await makeApp(f.db, { name: 'Grafana <prod>' });
    const web = new WebClient(f.app);
    expect((await web.get(authorizeUrl(c.clientId))).headers.location).toBe('/users/sign_in');
    const page = await web.get('/users/sign_in');
    expect(page.body).toContain('Sign in to continue to <strong id="continue-to">Grafana &lt;prod&gt;</strong>');
    const plain = await new WebClient(f.app).get('/users/sign_in');
    expect(plain.body).not.toContain('continue-to');
  });

  it('focus: the login when empty; after a refusal, the password; a hidden show-password toggle and forgot link', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    const page = await web.get('/users/sign_in');
    expect(autofocused(page.body)).toBe('user_login');
    expect(page.body).toContain(
      '<button type="button" class="button small" data-show-password="#user_password" hidden>Show password</button>',
    );
    expect(page.body).toContain('<a href="/users/password/new">Forgot your password?</a>');
    const wrong = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(page.body),
      'user[login]': 'alice',
      'user[password]': 'nope',
    });
    expect(wrong.statusCode).toBe(401);
    expect(autofocused(wrong.body)).toBe('user_password');
  });

  it('the 2FA step offers "Sign in as someone else": back to the password step (303), the pending step gone', async () => {
    await makeUser(f.db, 'carol', { twoFactor: true });
    const web = new WebClient(f.app);
    const step = await web.secondStep('carol', PASSWORD);
    expect(step.body).toContain('<h1>Two-factor authentication</h1>');
    expect(step.body).toContain('Sign in as someone else');
    const restart = await web.post('/users/sign_in', { authenticity_token: WebClient.csrf(step.body), restart: '1' });
    expect([restart.statusCode, restart.headers.location]).toEqual([303, '/users/sign_in']);
    const late = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(step.body),
      'user[otp_attempt]': '123456',
    });
    expect(late.statusCode).toBe(401);
    expect(late.body).toContain('Sign in again.');
  });
});

describe('recovery codes: download, then "I have saved them"', () => {
  it('after enrolling: shown with Copy, Download (.txt) and Print; the file only until saved; Back shows no codes', async () => {
    await makeUser(f.db, 'dana');
    const web = new WebClient(f.app);
    await web.signIn('dana', PASSWORD);
    const enrol = await web.get('/-/profile/two_factor_auth');
    const secret = /id="otp-secret">([^<]+)</.exec(enrol.body)![1].replace(/\s/g, '');
    expect(enrol.body).toContain('data-copy="#otp-secret" hidden>Copy key</button>');
    expect(enrol.body).toContain('data-copy="#otpauth-uri" hidden>Copy link</button>');
    const done = await web.post('/-/profile/two_factor_auth', {
      authenticity_token: WebClient.csrf(enrol.body),
      pin_code: totp(secret),
    });
    expect([done.statusCode, done.headers.location]).toEqual([303, '/-/profile/two_factor_auth']);
    const page = await web.get('/-/profile/two_factor_auth');
    const codes = [...page.body.matchAll(/<code class="secret">([0-9a-f]{16})<\/code>/g)].map((m) => m[1]);
    expect(codes).toHaveLength(10);
    expect(page.body).toContain('data-copy="#recovery-codes-list" hidden>Copy codes</button>');
    expect(page.body).toContain('data-print hidden>Print</button>');
    const file = await web.get('/-/profile/two_factor_auth/recovery_codes.txt');
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(file.headers['content-disposition']).toBe('attachment; filename="lanyard-recovery-codes.txt"');
    expect(file.headers['cache-control']).toBe('no-store');
    expect(file.body.split('\n').filter((l) => /^[0-9a-f]{16}$/.test(l))).toEqual(codes);

    const saved = await web.post('/-/profile/two_factor_auth/codes/saved', {
      authenticity_token: WebClient.csrf(page.body),
    });
    expect([saved.statusCode, saved.headers.location]).toEqual([303, '/-/profile/two_factor_auth']);
    const after = await web.get('/-/profile/two_factor_auth');
    expect(after.body).not.toMatch(/[0-9a-f]{16}<\/code>/);
    const gone = await web.get('/-/profile/two_factor_auth/recovery_codes.txt');
    expect(gone.statusCode).toBe(404);
    expect(gone.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(gone.body).not.toContain(codes[0]);
  });
});

describe('users set-2fa on --require-enrolment', () => {
  const passwordGrant = (username: string) =>
    f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: FORM,
      payload: form({ grant_type: 'password', username, password: PASSWORD }),
    });

  it('after the password: the enrolment and nothing else; the password grant refused; enrolled → codes, then on', async () => {
    await makeUser(f.db, 'erin');
    const c = await makeApp(f.db, { name: 'Grafana' });
    expect((await passwordGrant('erin')).statusCode).toBe(200);
    await requireTwoFactorEnrolment(f.db, 'erin', 'admin:test');
    expect((await passwordGrant('erin')).json()).toEqual(expect.objectContaining({ error: 'invalid_grant' }));

    const web = new WebClient(f.app);
    await web.get(authorizeUrl(c.clientId, { state: 'xyz' }));
    const res = await web.signIn('erin', PASSWORD);
    expect([res.statusCode, res.headers.location]).toEqual([303, '/users/two_factor_enrolment']);
    // Not signed in: every other page still asks for sign-in.
    for (const url of ['/-/profile', '/profile/applications', authorizeUrl(c.clientId)])
      expect((await web.get(url)).headers.location).toBe('/users/sign_in');
    // The authorize visit above replaced where sign-in returns; come back through it.
    await web.get(authorizeUrl(c.clientId, { state: 'xyz' }));

    const enrol = await web.get('/users/two_factor_enrolment');
    expect(enrol.statusCode).toBe(200);
    expect(enrol.body).toContain('<h1>Set up two-factor authentication</h1>');
    const secret = /id="otp-secret">([^<]+)</.exec(enrol.body)![1].replace(/\s/g, '');
    const wrong = await web.post('/users/two_factor_enrolment', {
      authenticity_token: WebClient.csrf(enrol.body),
      pin_code: totp(secret) === '000000' ? '111111' : '000000',
    });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.body).toContain('aria-describedby="pin_code-hint pin_code-error"');
    expect(wrong.body).toContain(
      '<a href="#pin_code">The code is not correct. Enter the 6-digit code your authenticator app shows now</a>',
    );

    const ok = await web.post('/users/two_factor_enrolment', {
      authenticity_token: WebClient.csrf(wrong.body),
      pin_code: totp(secret),
    });
    expect([ok.statusCode, ok.headers.location]).toEqual([303, '/-/profile/two_factor_auth']);
    const codesPage = await web.get('/-/profile/two_factor_auth');
    expect([...codesPage.body.matchAll(/<code class="secret">[0-9a-f]{16}<\/code>/g)]).toHaveLength(10);
    // "I have saved them" continues to the authorization that started it.
    const saved = await web.post('/-/profile/two_factor_auth/codes/saved', {
      authenticity_token: WebClient.csrf(codesPage.body),
    });
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toContain('/oauth/authorize?');
    expect(saved.headers.location).toContain('state=xyz');

    const row = await f.db
      .selectFrom('users')
      .select(['otp_enrolment_required', 'otp_secret'])
      .where('username', '=', 'erin')
      .executeTakeFirstOrThrow();
    expect(row.otp_enrolment_required).toBe(false);
    expect(row.otp_secret).not.toBeNull();
    // From now on: the password and a code, as for anyone with 2FA; the password grant stays refused.
    expect((await passwordGrant('erin')).json()).toEqual(expect.objectContaining({ error: 'invalid_grant' }));
    const again = await new WebClient(f.app).secondStep('erin', PASSWORD);
    expect(again.body).toContain('id="user_otp_attempt"');
  });
});
