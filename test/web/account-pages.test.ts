// The account pages through the real app: every POST answers 303 + Location + a one-time flash
// (post/redirect/get), bad input is the page again with its message, a 4xx and nothing changed.
import { beforeEach, describe, expect, it } from 'vitest';
import { issueAccessToken } from '../../service/domain/oauth-tokens';
import { sha256Hex } from '../../service/domain/secrets';
import { totp } from '../support/totp';
import { openTotpSecret } from '../../service/domain/totp-secrets';
import { addMember, createGroup, createProject, makePat } from '../support/api-fixtures';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let web: WebClient;
let alice: Awaited<ReturnType<typeof makeUser>>['user'];

beforeEach(async () => {
  await resetDatabase(f.db, ['service_keys']);
  alice = (await makeUser(f.db, 'alice')).user;
  await makeUser(f.db, 'bob');
  web = new WebClient(f.app);
  expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
});

const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
const notice = (body: string) => /id="flash-notice">([^<]*)</.exec(body)?.[1];
const alert = (body: string) => /id="flash-alert">([^<]*)</.exec(body)?.[1];
const fieldError = (body: string, id: string) =>
  new RegExp(`id="${id}-error"><span class="visually-hidden">Error: </span>([^<]*)<`).exec(body)?.[1];

/** GET the page, then POST its form with the page's CSRF token. */
async function submit(page: string, action: string, values: Record<string, string | undefined>) {
  const csrf = WebClient.csrf((await web.get(page)).body);
  return web.post(action, { authenticity_token: csrf, ...values });
}

function expectSeeOther(res: Awaited<ReturnType<WebClient['post']>>, location: string) {
  expect(res.statusCode).toBe(303);
  expect(res.headers.location).toBe(location);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.body).toBe('');
}

const audits = async (action: string) =>
  (await f.db.selectFrom('audit_events').select(['actor', 'action']).where('action', '=', action).execute()).length;

describe('personal access tokens', () => {
  const PATS = '/-/user_settings/personal_access_tokens';
  const create = (values: Record<string, string | undefined>) =>
    submit(PATS, PATS, {
      'personal_access_token[name]': 'ci',
      'personal_access_token[expires_at]': day(30),
      'personal_access_token[scopes][]': 'read_user',
      ...values,
    });

  it('creates (303), shows the token once, it works on /api/v4/user; a reload shows nothing', async () => {
    const res = await create({});
    expectSeeOther(res, PATS);
    const sessionData = JSON.stringify(
      (await f.db.selectFrom('web_sessions').select('data').where('user_id', '=', alice.id).execute()).map(
        (r) => r.data,
      ),
    );
    const page = await web.get(PATS);
    expect(notice(page.body)).toBe('Your new personal access token has been created.');
    const token = /id="created-personal-access-token">([^<]+)</.exec(page.body)![1];
    expect(token).toMatch(/^glpat-[A-Za-z0-9_-]{20,}$/);
    // While it waited for this page, the token sat sealed in the session, never in plaintext.
    expect(sessionData).not.toContain(token);
    const row = await f.db
      .selectFrom('personal_access_tokens')
      .select(['name', 'scopes', 'expires_at', 'token_digest', 'user_id'])
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      name: 'ci',
      scopes: ['read_user'],
      expires_at: day(30),
      token_digest: sha256Hex(token),
      user_id: alice.id,
    });
    const api = await f.app.inject({ method: 'GET', url: '/api/v4/user', headers: { 'private-token': token } });
    expect(api.statusCode).toBe(200);
    expect(api.json()).toMatchObject({ username: 'alice' });
    const reload = await web.get(PATS);
    expect(reload.body).not.toContain(token);
    expect(notice(reload.body)).toBeUndefined();
    expect(reload.body).toContain('<td data-label="Token name">ci</td>');
    expect(await audits('personal_access_token.create')).toBe(1);
  });

  const PAST = () => `Expiration date must be in the future, from ${day(1)}`;
  const TOO_LATE = () => `Expiration date must be no later than ${day(365)}, 365 days from today`;
  const SCOPES = 'Select scopes from the list';
  it.each([
    [{ 'personal_access_token[name]': '' }, 'token_name', 'Enter a token name'],
    [{ 'personal_access_token[name]': 'x'.repeat(256) }, 'token_name', 'Token name must be 255 characters or fewer'],
    [{ 'personal_access_token[expires_at]': day(-1) }, 'token_expires_at', PAST],
    [{ 'personal_access_token[expires_at]': day(0) }, 'token_expires_at', PAST],
    [{ 'personal_access_token[expires_at]': '' }, 'token_expires_at', 'Enter an expiration date'],
    [{ 'personal_access_token[expires_at]': day(366) }, 'token_expires_at', TOO_LATE],
    [{ 'personal_access_token[expires_at]': '2026-02-30' }, 'token_expires_at', 'Expiration date must be a real date'],
    [{ 'personal_access_token[scopes][]': 'sudo' }, 'token_scopes', SCOPES],
    [{ 'personal_access_token[scopes][]': 'openid' }, 'token_scopes', SCOPES],
    [{ 'personal_access_token[scopes][]': undefined }, 'token_scopes', 'Select at least one scope'],
  ])('bad input %j → 303 back to the form, "%s" message, nothing created', async (values, field, message) => {
    // Post/redirect/get for a refusal too: Back and reload never re-post the form.
    expectSeeOther(await create(values), PATS);
    const res = await web.get(PATS);
    const expected = typeof message === 'function' ? message() : message;
    expect(fieldError(res.body, field)).toBe(expected);
    // The summary links to the field; no other field is marked; no domain wording leaks.
    expect(res.body).toContain(
      `<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#${field}">${expected}</a></li></ul>`,
    );
    expect(res.body.match(/class="field-error"/g)).toHaveLength(1);
    expect(res.body).not.toMatch(/sudo|unknown scope|choose from|YYYY|is invalid|can.t be blank/i);
    expect(await f.db.selectFrom('personal_access_tokens').select('id').execute()).toEqual([]);
  });

  it('offers only the scopes a token can hold (sudo to administrators), each in words; the new token has a copy button', async () => {
    const offered = (body: string) => [...body.matchAll(/id="token_scopes-([a-z_]+)"/g)].map((m) => m[1]);
    const page = await web.get(PATS);
    expect(offered(page.body)).toEqual(['api', 'read_api', 'read_user']);
    expect(page.body).toContain(
      '<span class="hint" id="token_scopes-read_user-hint">Read your profile: your name, username and e-mail addresses</span>',
    );
    expect(page.body).not.toMatch(/sudo|openid|GitLab/);
    await f.db.updateTable('users').set({ is_admin: true }).where('id', '=', alice.id).execute();
    expect(offered((await web.get(PATS)).body)).toEqual(['api', 'read_api', 'read_user', 'sudo']);
    expectSeeOther(await create({ 'personal_access_token[scopes][]': 'sudo' }), PATS);
    const shown = (await web.get(PATS)).body;
    expect(shown).toContain(
      '<button type="button" class="button small copy" data-copy="#created-personal-access-token" aria-label="Copy the personal access token" hidden>Copy</button>',
    );
  });

  it('shows expiry in words, highlights the ones expiring within 7 days, and pages the list by 20', async () => {
    for (const [name, offset] of [
      ['soon', 3],
      ['today', 0],
      ['later', 10],
    ] as const)
      await f.db
        .insertInto('personal_access_tokens')
        .values({ user_id: alice.id, name, token_digest: sha256Hex(name), scopes: ['api'], expires_at: day(offset) })
        .execute();
    const body = (await web.get(PATS)).body;
    const cell = (name: string) =>
      new RegExp(`<td data-label="Token name">${name}</td>.*?<td data-label="Expires">(.*?)</td>`, 's').exec(body)?.[1];
    expect(cell('later')).toBe(
      `<span class="expiry"><time datetime="${day(10)}" title="${day(10)}">in 10 days</time><span class="muted"> (${day(10)})</span></span>`,
    );
    expect(cell('soon')).toBe(
      `<span class="expiry expiring-soon"><time datetime="${day(3)}" title="${day(3)}">in 3 days</time><span class="muted"> (${day(3)})</span><span class="badge badge-warning">Expires soon</span></span>`,
    );
    expect(cell('today')).toContain('>today</time>');
    expect(body).not.toContain('class="pagination"');

    for (let i = 0; i < 20; i++) await makePat(f.db, alice, ['api']);
    const first = (await web.get(PATS)).body;
    expect(first).toContain('Active personal access tokens (23)');
    expect(first.match(/<td data-label="Token name">/g)).toHaveLength(20);
    expect(first).toContain(
      `<nav class="pagination" aria-label="Personal access tokens pages"><span aria-current="page">Page 1 of 2</span><a href="${PATS}?page=2" rel="next">Next</a></nav>`,
    );
    const second = (await web.get(`${PATS}?page=2`)).body;
    expect(second.match(/<td data-label="Token name">/g)).toHaveLength(3);
    // Newest first: the three named ones were made first, so they are on page 2.
    expect(second).toContain('<td data-label="Token name">soon</td>');
    expect(second).toContain(`<a href="${PATS}" rel="prev">Previous</a>`);
    expect((await web.get(`${PATS}?page=abc`)).body.match(/<td data-label="Token name">/g)).toHaveLength(20);
  });

  it('revoke: a confirm page that changes nothing, then 303; the token stops working; another user’s id → 404', async () => {
    await create({});
    const token = /id="created-personal-access-token">([^<]+)</.exec((await web.get(PATS)).body)![1];
    const { id } = await f.db.selectFrom('personal_access_tokens').select('id').executeTakeFirstOrThrow();
    const confirm = await web.get(`${PATS}/${id}/revoke`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain(`<form method="post" action="${PATS}/${id}/revoke">`);
    expect(
      (await f.db.selectFrom('personal_access_tokens').select('revoked_at').executeTakeFirstOrThrow()).revoked_at,
    ).toBeNull();

    const bobWeb = new WebClient(f.app);
    await bobWeb.signIn('bob', PASSWORD);
    const csrf = WebClient.csrf((await bobWeb.get(PATS)).body);
    const theirs = await bobWeb.post(`${PATS}/${id}/revoke`, { authenticity_token: csrf });
    expect(theirs.statusCode).toBe(404);
    expect(alert(theirs.body)).toBe('That personal access token was not found.');
    expect((await bobWeb.get(`${PATS}/${id}/revoke`)).statusCode).toBe(404);
    expect(
      (await f.db.selectFrom('personal_access_tokens').select('revoked_at').executeTakeFirstOrThrow()).revoked_at,
    ).toBeNull();

    const res = await web.post(`${PATS}/${id}/revoke`, { authenticity_token: WebClient.csrf(confirm.body) });
    expectSeeOther(res, PATS);
    expect(notice((await web.get(PATS)).body)).toBe('Revoked personal access token ci.');
    const api = await f.app.inject({ method: 'GET', url: '/api/v4/user', headers: { 'private-token': token } });
    expect(api.statusCode).toBe(401);
    // Posting again (a reload of the POST) changes nothing more: the token is no longer listed.
    expect(
      (await web.post(`${PATS}/${id}/revoke`, { authenticity_token: WebClient.csrf(confirm.body) })).statusCode,
    ).toBe(404);
    expect(await audits('personal_access_token.revoke')).toBe(1);
  });

  it('CSRF: a post without the token is refused (422), one from another origin too (403, the Origin check); signed out → sign in', async () => {
    expect((await web.post(PATS, { 'personal_access_token[name]': 'x' })).statusCode).toBe(422);
    const csrf = WebClient.csrf((await web.get(PATS)).body);
    const crossSite = await web.post(
      PATS,
      {
        authenticity_token: csrf,
        'personal_access_token[name]': 'x',
        'personal_access_token[expires_at]': day(3),
        'personal_access_token[scopes][]': 'api',
      },
      { origin: 'https://evil.example' },
    );
    expect(crossSite.statusCode).toBe(403);
    expect(await f.db.selectFrom('personal_access_tokens').select('id').execute()).toEqual([]);
    const anon = new WebClient(f.app);
    expect((await anon.get(PATS)).headers.location).toBe('/users/sign_in');
  });
});

describe('two-factor authentication', () => {
  const TFA = '/-/profile/two_factor_auth';
  const secretOf = (body: string) => /id="otp-secret">([^<]+)</.exec(body)![1].replace(/ /g, '');

  async function enrol() {
    const page = await web.get(TFA);
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/<div class="qr" role="img" aria-label="QR code of your two-factor secret"><svg /);
    const secret = secretOf(page.body);
    const res = await web.post(TFA, { authenticity_token: WebClient.csrf(page.body), pin_code: totp(secret) });
    expectSeeOther(res, TFA);
    const shown = await web.get(TFA);
    const codes = [...shown.body.matchAll(/<li><code class="secret">([0-9a-f]{16})<\/code><\/li>/g)].map((m) => m[1]);
    return { secret, codes, shown };
  }

  it('enrols with a TOTP code from the shown secret; 10 recovery codes shown until saved, stored hashed', async () => {
    const { secret, codes, shown } = await enrol();
    expect(notice(shown.body)).toBe('You have set up two-factor authentication. Save your recovery codes.');
    expect(codes).toHaveLength(10);
    const user = await f.db
      .selectFrom('users')
      .select('otp_secret')
      .where('id', '=', alice.id)
      .executeTakeFirstOrThrow();
    // Sealed at rest (issue 22: the page stored the seed in clear), and it opens to the shown seed.
    expect(user.otp_secret).toMatch(/^totp1\./);
    expect(openTotpSecret(await f.app.sessions.keyRing().load(), alice.id, user.otp_secret!).secret).toBe(secret);
    const stored = await f.db
      .selectFrom('user_recovery_codes')
      .select('code_digest')
      .where('user_id', '=', alice.id)
      .execute();
    expect(stored.map((r) => r.code_digest).sort()).toEqual(codes.map(sha256Hex).sort());
    // Shown (and downloadable) until the person says they saved them; then never again.
    const reload = await web.get(TFA);
    expect(reload.body).toContain(codes[0]);
    const saved = await web.post(`${TFA}/codes/saved`, { authenticity_token: WebClient.csrf(reload.body) });
    expect([saved.statusCode, saved.headers.location]).toEqual([303, TFA]);
    const after = await web.get(TFA);
    expect(after.body).not.toContain(codes[0]);
    expect(after.body).toContain('10 of 10 recovery codes remain unused.');
    expect(await audits('user.enable_2fa')).toBe(1);
  });

  it('a wrong pin: 422 with its message, 2FA stays off, the same secret is offered again', async () => {
    const page = await web.get(TFA);
    const secret = secretOf(page.body);
    const wrong = totp(secret) === '000000' ? '111111' : '000000';
    const res = await web.post(TFA, { authenticity_token: WebClient.csrf(page.body), pin_code: wrong });
    expect(res.statusCode).toBe(422);
    expect(fieldError(res.body, 'pin_code')).toBe(
      'The code is not correct. Enter the 6-digit code your authenticator app shows now',
    );
    expect(res.body).toContain(
      '<li><a href="#pin_code">The code is not correct. Enter the 6-digit code your authenticator app shows now</a></li>',
    );
    const blank = await web.post(TFA, { authenticity_token: WebClient.csrf(page.body), pin_code: ' ' });
    expect(blank.statusCode).toBe(422);
    expect(fieldError(blank.body, 'pin_code')).toBe('Enter the 6-digit code from your authenticator app');
    expect(secretOf(res.body)).toBe(secret);
    expect(
      (await f.db.selectFrom('users').select('otp_secret').where('id', '=', alice.id).executeTakeFirstOrThrow())
        .otp_secret,
    ).toBeNull();
  });

  it('a recovery code signs in once at the TOTP step; reused → refused', async () => {
    const { codes } = await enrol();
    const signIn = async (code: string) => {
      const client = new WebClient(f.app);
      const step = await client.secondStep('alice', PASSWORD);
      expect(step.statusCode).toBe(200);
      return client.post('/users/sign_in', {
        authenticity_token: WebClient.csrf(step.body),
        'user[otp_attempt]': code,
      });
    };
    const first = await signIn(codes[3].toUpperCase().replace(/(.{8})/, '$1-'));
    expect(first.statusCode).toBe(302);
    const again = await signIn(codes[3]);
    expect(again.statusCode).toBe(401);
    expect(fieldError(again.body, 'user_otp_attempt')).toBe(
      'The code is not correct. Enter the code your authenticator app shows now, or an unused recovery code',
    );
    expect(again.body).toContain(
      '<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#user_otp_attempt">',
    );
    const blank = await signIn('');
    expect(blank.statusCode).toBe(401);
    expect(fieldError(blank.body, 'user_otp_attempt')).toBe(
      'Enter the code from your authenticator app, or one of your recovery codes',
    );
    expect((await web.get(TFA)).body).toContain('9 of 10 recovery codes remain unused.');
  });

  it('regenerate and disable need the current password: wrong → 422 and nothing changes', async () => {
    const { codes } = await enrol();
    const digests = async () =>
      (await f.db.selectFrom('user_recovery_codes').select('code_digest').execute()).map((r) => r.code_digest).sort();
    const before = await digests();
    const wrongRegen = await submit(TFA, `${TFA}/codes`, { current_password: 'nope' });
    expect(wrongRegen.statusCode).toBe(422);
    expect(fieldError(wrongRegen.body, 'regenerate_current_password')).toBe(
      'The current password is not correct. Enter your current password',
    );
    const blankRegen = await submit(TFA, `${TFA}/codes`, { current_password: '' });
    expect(blankRegen.statusCode).toBe(422);
    expect(fieldError(blankRegen.body, 'regenerate_current_password')).toBe('Enter your current password');
    expect(await digests()).toEqual(before);
    const wrongDisable = await submit(TFA, `${TFA}/disable`, { current_password: 'nope' });
    expect(wrongDisable.statusCode).toBe(422);
    expect(fieldError(wrongDisable.body, 'disable_current_password')).toBe(
      'The current password is not correct. Enter your current password',
    );
    expect(
      (await f.db.selectFrom('users').select('otp_secret').where('id', '=', alice.id).executeTakeFirstOrThrow())
        .otp_secret,
    ).not.toBeNull();

    const regen = await submit(TFA, `${TFA}/codes`, { current_password: PASSWORD });
    expectSeeOther(regen, TFA);
    const fresh = [...(await web.get(TFA)).body.matchAll(/<li><code class="secret">([0-9a-f]{16})<\/code><\/li>/g)].map(
      (m) => m[1],
    );
    expect(fresh).toHaveLength(10);
    expect(fresh).not.toContain(codes[0]);
    expect(await digests()).toEqual(fresh.map(sha256Hex).sort());

    const disable = await submit(TFA, `${TFA}/disable`, { current_password: PASSWORD });
    expectSeeOther(disable, TFA);
    expect(notice((await web.get(TFA)).body)).toBe('Two-factor authentication has been disabled.');
    expect(
      (await f.db.selectFrom('users').select('otp_secret').where('id', '=', alice.id).executeTakeFirstOrThrow())
        .otp_secret,
    ).toBeNull();
    expect(await digests()).toEqual([]);
    expect(await audits('user.disable_2fa')).toBe(1);
  });
});

describe('password', () => {
  const EDIT = '/-/user_settings/password/edit';
  const UPDATE = '/-/user_settings/password';
  const hash = async () =>
    (await f.db.selectFrom('users').select('password_hash').where('id', '=', alice.id).executeTakeFirstOrThrow())
      .password_hash;

  it.each([
    [
      { 'user[password]': 'wrong password' },
      'user_password',
      'The current password is not correct. Enter your current password',
    ],
    [{ 'user[password]': '' }, 'user_password', 'Enter your current password'],
    [
      { 'user[new_password]': 'short', 'user[password_confirmation]': 'short' },
      'user_new_password',
      'Password must be 8 characters or more',
    ],
    [
      { 'user[new_password]': 'x'.repeat(1025), 'user[password_confirmation]': 'x'.repeat(1025) },
      'user_new_password',
      'Password must be 1024 characters or fewer',
    ],
    [{ 'user[new_password]': '', 'user[password_confirmation]': '' }, 'user_new_password', 'Enter a new password'],
    [
      { 'user[password_confirmation]': 'something else' },
      'user_password_confirmation',
      'Enter the same password in both new password fields',
    ],
  ])('bad input %j → 422 with its message, password unchanged', async (values, field, message) => {
    const before = await hash();
    const res = await submit(EDIT, UPDATE, {
      'user[password]': PASSWORD,
      'user[new_password]': 'a brand new passphrase',
      'user[password_confirmation]': 'a brand new passphrase',
      ...values,
    });
    expect(res.statusCode).toBe(422);
    expect(fieldError(res.body, field)).toBe(message);
    expect(res.body).toContain(
      `<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#${field}">${message}</a></li></ul>`,
    );
    expect(res.body).toMatch(
      new RegExp(`id="${field}"[^>]*aria-invalid="true" aria-describedby="[^"]*${field}-error"`),
    );
    expect(await hash()).toBe(before);
  });

  it('changes it (303): other sessions end, this one goes on, the new password signs in', async () => {
    const other = new WebClient(f.app);
    await other.signIn('alice', PASSWORD);
    expect((await other.get(EDIT)).statusCode).toBe(200);
    const res = await submit(EDIT, UPDATE, {
      'user[password]': PASSWORD,
      'user[new_password]': 'a brand new passphrase',
      'user[password_confirmation]': 'a brand new passphrase',
    });
    expectSeeOther(res, EDIT);
    const page = await web.get(EDIT);
    expect(page.statusCode).toBe(200);
    expect(notice(page.body)).toBe('Password was successfully updated. Other sessions have been signed out.');
    expect((await other.get(EDIT)).headers.location).toBe('/users/sign_in');
    expect((await new WebClient(f.app).signIn('alice', PASSWORD)).statusCode).toBe(401);
    expect((await new WebClient(f.app).signIn('alice', 'a brand new passphrase')).statusCode).toBe(302);
    expect(await audits('user.set_password')).toBe(1);
  });
});

describe('authorized applications', () => {
  it('lists each live grant with scopes; revoke (confirm, then 303) kills every token; unknown → 404', async () => {
    const app = await makeApp(f.db, { name: 'Grafana' });
    const t1 = await issueAccessToken(f.db, {
      applicationId: app.application.id,
      userId: alice.id,
      scopes: ['read_user'],
      withRefreshToken: true,
    });
    const t2 = await issueAccessToken(f.db, {
      applicationId: app.application.id,
      userId: alice.id,
      scopes: ['api'],
      withRefreshToken: true,
    });
    const AUTHORIZED = '/-/user_settings/authorized_applications';
    const page = await web.get(AUTHORIZED);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<h1>Authorized applications</h1>');
    expect(page.body).toContain(`<a href="${AUTHORIZED}" aria-current="page">Authorized applications</a>`);
    expect(page.body).toMatch(
      /<td data-label="Name">Grafana<\/td><td data-label="Scopes"><span class="badge">api<\/span><span class="badge">read_user<\/span><\/td>/,
    );
    const bobApp = await makeApp(f.db, { name: 'Other' });
    const unknown = await web.post(`${AUTHORIZED}/${bobApp.clientId}/revoke`, {
      authenticity_token: WebClient.csrf(page.body),
    });
    expect(unknown.statusCode).toBe(404);
    expect(alert(unknown.body)).toBe('That authorized application was not found.');
    expect((await web.get(`${AUTHORIZED}/${app.clientId}/revoke`)).statusCode).toBe(200);
    const live = async () =>
      (await f.db.selectFrom('oauth_access_tokens').select('id').where('revoked_at', 'is', null).execute()).length;
    expect(await live()).toBe(2);
    const res = await web.post(`${AUTHORIZED}/${app.clientId}/revoke`, {
      authenticity_token: WebClient.csrf(page.body),
    });
    expectSeeOther(res, AUTHORIZED);
    expect(await live()).toBe(0);
    for (const t of [t1, t2]) {
      const api = await f.app.inject({
        method: 'GET',
        url: '/api/v4/user',
        headers: { authorization: `Bearer ${t.accessToken}` },
      });
      expect(api.statusCode).toBe(401);
    }
    const after = await web.get(AUTHORIZED);
    expect(notice(after.body)).toBe('The access of Grafana was revoked.');
    expect(after.body).toContain('You have not authorized any applications to use your account.');
    expect(await audits('oauth_application.revoke_authorization')).toBe(1);
  });
});

describe('notifications', () => {
  const N = '/-/profile/notifications';

  it('shows each group and project with its effective level and where it comes from (gitlab#222840)', async () => {
    await createGroup(f.db, { path: 'top', visibility: 'private' });
    await createGroup(f.db, { path: 'sub', parent: 'top', visibility: 'private' });
    await createProject(f.db, { path: 'top/sub/app', visibility: 'private' });
    await addMember(f.db, { group: 'top', username: 'alice', access: 'developer' });
    const top = await f.db.selectFrom('groups').select('id').where('full_path', '=', 'top').executeTakeFirstOrThrow();
    const project = await f.db.selectFrom('projects').select('id').executeTakeFirstOrThrow();

    expectSeeOther(await submit(N, `${N}/groups/${top.id}`, { level: 'disabled' }), N);
    const page = await web.get(N);
    expect(notice(page.body)).toBe('Notification level of top set to Disabled.');
    const row = (path: string) =>
      new RegExp(`<tr data-path="${path}">.*?<td data-label="Applies" class="effective">(.*?)</td>`).exec(
        page.body,
      )?.[1];
    expect(row('top')).toBe('<strong>Disabled</strong> <span class="muted">set here</span>');
    expect(row('top/sub')).toBe('<strong>Disabled</strong> <span class="muted">from group <code>top</code></span>');
    expect(row('top/sub/app')).toBe('<strong>Disabled</strong> <span class="muted">from group <code>top</code></span>');

    expectSeeOther(await submit(N, `${N}/projects/${project.id}`, { level: 'watch' }), N);
    expectSeeOther(await submit(N, N, { level: 'mention', notification_email: 'alice@example.com' }), N);
    const again = await web.get(N);
    const row2 = (path: string) =>
      new RegExp(`<tr data-path="${path}">.*?<td data-label="Applies" class="effective">(.*?)</td>`).exec(
        again.body,
      )?.[1];
    expect(row2('top/sub/app')).toBe('<strong>Watch</strong> <span class="muted">set here</span>');
    expectSeeOther(await submit(N, `${N}/groups/${top.id}`, { level: 'global' }), N);
    const third = await web.get(N);
    expect(
      /<tr data-path="top\/sub">.*?<td data-label="Applies" class="effective">(.*?)<\/td>/.exec(third.body)?.[1],
    ).toBe('<strong>On mention</strong> <span class="muted">from your global setting</span>');
    expect(await audits('notification_settings.update')).toBe(4);
  });

  // Issue 22's finding: a user with no memberships set `watch` on a public group, and the page then
  // listed its private subgroup and project, which the API answers 404 for.
  it('a level on a public group lists only what the person may see below it, as the API does', async () => {
    await createGroup(f.db, { path: 'pub', visibility: 'public' });
    await createGroup(f.db, { path: 'hidden', parent: 'pub', visibility: 'private' });
    await createGroup(f.db, { path: 'open', parent: 'pub', visibility: 'internal' });
    await createProject(f.db, { path: 'pub/hidden/app', visibility: 'private' });
    await createProject(f.db, { path: 'pub/secret', visibility: 'private' });
    await createProject(f.db, { path: 'pub/site', visibility: 'public' });
    const pub = await f.db.selectFrom('groups').select('id').where('full_path', '=', 'pub').executeTakeFirstOrThrow();

    expectSeeOther(await submit(N, `${N}/groups/${pub.id}`, { level: 'watch' }), N);
    const page = await web.get(N);
    expect(page.statusCode).toBe(200);
    const paths = [...page.body.matchAll(/<tr data-path="([^"]+)">/g)].map((m) => m[1]);
    expect(paths).toEqual(['pub', 'pub/open', 'pub/site']);
    for (const hidden of ['pub/hidden', 'pub/hidden/app', 'pub/secret']) expect(page.body).not.toContain(hidden);
    expect(page.body).toContain('<h2 id="groups">Groups (2)</h2>');
    expect(page.body).toContain('<h2 id="projects">Projects (1)</h2>');

    // The API agrees: what the page leaves out is a 404 there, what it shows is a 200.
    const token = await makePat(f.db, alice, ['read_api']);
    const api = (url: string) => f.app.inject({ method: 'GET', url, headers: { 'private-token': token } });
    for (const [url, status] of [
      ['/api/v4/groups/pub%2Fhidden', 404],
      ['/api/v4/projects/pub%2Fhidden%2Fapp', 404],
      ['/api/v4/projects/pub%2Fsecret', 404],
      ['/api/v4/groups/pub%2Fopen', 200],
      ['/api/v4/projects/pub%2Fsite', 200],
      ['/api/v4/projects/pub%2Fsecret/notification_settings/effective', 404],
      ['/api/v4/projects/pub%2Fsite/notification_settings/effective', 200],
    ] as const)
      expect([url, (await api(url)).statusCode]).toEqual([url, status]);
    const effective = await api('/api/v4/projects/pub%2Fsite/notification_settings/effective');
    expect(effective.json()).toMatchObject({
      level: 'watch',
      source: { type: 'group', id: pub.id, full_path: 'pub' },
    });
  });

  it('bad input: unknown level, unverified e-mail, an invisible group → 4xx, nothing changed', async () => {
    await createGroup(f.db, { path: 'secret', visibility: 'private' });
    const hidden = await f.db.selectFrom('groups').select('id').executeTakeFirstOrThrow();
    const rows = () => f.db.selectFrom('notification_settings').select(['level', 'notification_email']).execute();
    const badLevel = await submit(N, N, { level: 'loud' });
    expect(badLevel.statusCode).toBe(422);
    expect(fieldError(badLevel.body, 'global_level')).toBe('Select a notification level');
    expect(badLevel.body).toContain('<li><a href="#global_level">Select a notification level</a></li>');
    expect(badLevel.body).toContain(
      '<select id="global_level" name="level" aria-invalid="true" aria-describedby="global_level-hint global_level-error">',
    );
    const badEmail = await submit(N, N, { level: 'watch', notification_email: 'bob@example.com' });
    expect(badEmail.statusCode).toBe(422);
    expect(fieldError(badEmail.body, 'notification_email')).toBe(
      'Select a notification e-mail from your confirmed e-mail addresses',
    );
    // A group's own level: the summary links to that group's select, and the message is beside it.
    await createGroup(f.db, { path: 'mine', visibility: 'public' });
    const mine = await f.db.selectFrom('groups').select('id').where('full_path', '=', 'mine').executeTakeFirstOrThrow();
    expectSeeOther(await submit(N, `${N}/groups/${mine.id}`, { level: 'watch' }), N);
    const before = await rows();
    const badTarget = await submit(N, `${N}/groups/${mine.id}`, { level: 'loud' });
    expect(badTarget.statusCode).toBe(422);
    expect(badTarget.body).toContain(
      `<li><a href="#level-group-${mine.id}">Select a notification level for mine</a></li>`,
    );
    expect(fieldError(badTarget.body, `level-group-${mine.id}`)).toBe('Select a notification level for mine');
    expect(badTarget.body).toContain(
      `<select id="level-group-${mine.id}" name="level" aria-invalid="true" aria-describedby="level-group-${mine.id}-error">`,
    );
    expect(await rows()).toEqual(before);
    await f.db.deleteFrom('notification_settings').execute();
    const invisible = await submit(N, `${N}/groups/${hidden.id}`, { level: 'watch' });
    expect(invisible.statusCode).toBe(404);
    expect(alert(invisible.body)).toBe('That group was not found.');
    expect(await rows()).toEqual([]);
  });
});
