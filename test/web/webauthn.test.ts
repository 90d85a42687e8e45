// Passkeys and security keys through the routes (app.inject, real PostgreSQL), with a software
// authenticator (test/support/soft-authenticator.ts) standing in for the browser: registration,
// the second factor after the password, passwordless sign-in, amr/acr in the ID token, rename and
// remove, and the bad input of issue 29 (forged or tampered clientDataJSON, another origin, a
// challenge reused or expired, an unknown or removed credential, a counter going backwards,
// garbage attestation, another account's key), each refused with its message, nothing changed,
// and counted by the brute-force limits.
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose';
import { beforeEach, describe, expect, it } from 'vitest';
import { setUserState } from '../../service/domain/users';
import { resetDatabase } from '../support/db';
import { SoftAuthenticator } from '../support/soft-authenticator';
import { obtainCode, WebClient } from '../oauth/support/browser-like';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from '../oauth/support/harness';

const ISSUER = 'https://lanyard.example.com';
const RP_ID = 'lanyard.example.com';
const f = useFixture({ config: { publicUrl: ISSUER } });
const PAGE = '/-/profile/two_factor_auth';

beforeEach(() => resetDatabase(f.db, ['service_keys']));

const key = (o: { uv?: boolean; backupEligible?: boolean; origin?: string } = {}) =>
  new SoftAuthenticator({ origin: ISSUER, uv: true, ...o });

async function signedIn(username: string) {
  const web = new WebClient(f.app);
  const res = await web.signIn(username, PASSWORD);
  expect(res.statusCode).toBe(302);
  return web;
}

async function registrationOptions(web: WebClient) {
  const page = await web.get(PAGE);
  expect(page.statusCode).toBe(200);
  const csrf = WebClient.csrf(page.body);
  const res = await web.post(`${PAGE}/webauthn/options`, { authenticity_token: csrf });
  expect(res.statusCode).toBe(200);
  expect(res.headers['cache-control']).toBe('no-store');
  return { csrf, options: res.json() };
}

async function register(web: WebClient, authenticator: SoftAuthenticator, name: string) {
  const { csrf, options } = await registrationOptions(web);
  const credential = authenticator.create(options);
  return web.post(`${PAGE}/webauthn`, { authenticity_token: csrf, name, credential: JSON.stringify(credential) });
}

const credentialsOf = (userId: number) =>
  f.db
    .selectFrom('webauthn_credentials')
    .select(['name', 'device_type', 'backed_up', 'sign_count', 'last_used_at'])
    .where('user_id', '=', userId)
    .orderBy('id')
    .execute();

const addressFailures = async () =>
  Number(
    (
      await f.db
        .selectFrom('rate_limit_counters')
        .select('count')
        .where('key', 'like', 'failures:addr:%')
        .executeTakeFirst()
    )?.count ?? 0,
  );

const failedAttempts = async (userId: number) =>
  (await f.db.selectFrom('users').select('failed_attempts').where('id', '=', userId).executeTakeFirstOrThrow())
    .failed_attempts;

/** The sign-in options of this browser session for `purpose`, and the CSRF token they used. */
async function signInOptions(web: WebClient, purpose: 'second_factor' | 'passwordless', html?: string) {
  const csrf = WebClient.csrf(html ?? (await web.get('/users/sign_in')).body);
  const res = await web.post('/users/sign_in/webauthn/options', { authenticity_token: csrf, purpose });
  return { csrf, res, options: res.statusCode === 200 ? res.json() : undefined };
}

async function passwordStep(username: string) {
  const web = new WebClient(f.app);
  const step = await web.secondStep(username, PASSWORD);
  expect(step.statusCode).toBe(200);
  return { web, page: step.body };
}

const assert = (web: WebClient, csrf: string, purpose: string, credential: unknown) =>
  web.post('/users/sign_in/webauthn', {
    authenticity_token: csrf,
    purpose,
    credential: typeof credential === 'string' ? credential : JSON.stringify(credential),
  });

const alertOf = (html: string) => /<p class="flash flash-alert" role="alert"[^>]*>([^<]+)<\/p>/.exec(html)?.[1];

async function idTokenOf(web: WebClient) {
  const app = await makeApp(f.db, { scopes: 'openid', trusted: true });
  const code = await obtainCode(web, app.clientId, { scope: 'openid' });
  const res = await f.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { ...FORM, authorization: basic(app.clientId, app.secret) },
    payload: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
  });
  expect(res.statusCode).toBe(200);
  const jwks: JSONWebKeySet = (await f.app.inject({ url: '/oauth/discovery/keys' })).json();
  const { payload } = await jwtVerify(res.json().id_token, createLocalJWKSet(jwks), {
    issuer: ISSUER,
    audience: app.clientId,
  });
  return payload;
}

describe('registration', () => {
  it('options: RP ID from PUBLIC_URL, attestation none, a fresh challenge each time, own keys excluded', async () => {
    await makeUser(f.db, 'alice');
    const web = await signedIn('alice');
    const { options } = await registrationOptions(web);
    expect(options.rp).toEqual({ name: 'Lanyard', id: RP_ID });
    expect(options.attestation).toBe('none');
    expect(options.user.name).toBe('alice');
    expect(options.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(options.authenticatorSelection).toMatchObject({ residentKey: 'preferred', userVerification: 'preferred' });
    expect(options.excludeCredentials).toEqual([]);
    expect((await register(web, key(), 'Laptop')).statusCode).toBe(303);
    const again = (await registrationOptions(web)).options;
    expect(again.challenge).not.toBe(options.challenge);
    expect(again.excludeCredentials).toHaveLength(1);
    expect(again.user.id).toBe(options.user.id);
  });

  it('adds a security key: listed with its type and dates, recovery codes shown once, 2FA now on', async () => {
    const { user } = await makeUser(f.db, 'alice');
    const web = await signedIn('alice');
    const res = await register(web, key(), 'Blue key');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(PAGE);
    const page = await web.get(PAGE);
    expect(page.body).toContain('Your security key “Blue key” was added. Save your recovery codes.');
    expect([...page.body.matchAll(/<code class="secret">([0-9a-f]{16})<\/code>/g)]).toHaveLength(10);
    expect(page.body).toMatch(/<td data-label="Name">Blue key<\/td>\s*<td data-label="Type">Security key<\/td>/);
    expect(page.body).toContain('<td data-label="Last used">Never</td>');
    // Shown until the person says they saved them, then never again.
    const reload = await web.get(PAGE);
    expect(reload.body).toContain('<code class="secret">');
    const saved = await web.post(`${PAGE}/codes/saved`, { authenticity_token: WebClient.csrf(reload.body) });
    expect([saved.statusCode, saved.headers.location]).toEqual([303, PAGE]);
    expect((await web.get(PAGE)).body).not.toContain('<code class="secret">');
    expect(await credentialsOf(user.id)).toEqual([
      { name: 'Blue key', device_type: 'singleDevice', backed_up: false, sign_count: 0, last_used_at: null },
    ]);
    const api = await f.db
      .selectFrom('users')
      .select(['webauthn_credential_count', 'otp_secret'])
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(api).toEqual({ webauthn_credential_count: 1, otp_secret: null });
    // A second one brings no new codes.
    expect((await register(web, key({ backupEligible: true }), 'Phone')).statusCode).toBe(303);
    const second = await web.get(PAGE);
    expect(second.body).toContain('Your passkey “Phone” was added.');
    expect(second.body).not.toContain('<code class="secret">');
    expect(second.body).toMatch(/<td data-label="Name">Phone<\/td>\s*<td data-label="Type">Passkey<\/td>/);
  });

  it('the password grant refuses a user whose only second factor is a security key (invalid_grant)', async () => {
    await makeUser(f.db, 'alice');
    const app = await makeApp(f.db, { scopes: 'api' });
    const grant = () =>
      f.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { ...FORM, authorization: basic(app.clientId, app.secret) },
        payload: form({ grant_type: 'password', username: 'alice', password: PASSWORD }),
      });
    expect((await grant()).statusCode).toBe(200);
    await register(await signedIn('alice'), key(), 'Key');
    const refused = await grant();
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toBe('invalid_grant');
  });

  const bad: Array<[string, (a: SoftAuthenticator, o: never) => unknown, string]> = [
    ['not JSON', () => '{not json', 'The browser sent no valid passkey registration. Try again.'],
    ['empty', () => '', 'The browser sent no valid passkey registration. Try again.'],
    [
      'another origin',
      (a, o) => a.create(o, { origin: 'https://evil.example' }),
      'The passkey registration was refused: Unexpected registration response origin "https://evil.example", expected "https://lanyard.example.com"',
    ],
    [
      'another RP ID',
      (a, o) => a.create(o, { rpId: 'evil.example' }),
      'The passkey registration was refused: Unexpected RP ID hash',
    ],
    [
      'a forged challenge',
      (a, o) => a.create(o, { challenge: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
      'This registration has expired or was already used. Try again.',
    ],
    [
      'garbage attestation',
      (a, o) => a.create(o, { attestationObject: Buffer.from('garbage attestation object').toString('base64url') }),
      'The passkey registration was refused:',
    ],
    [
      'an assertion type',
      (a, o) => a.create(o, { type: 'webauthn.get' }),
      'The passkey registration was refused: Unexpected registration response type: webauthn.get',
    ],
  ];
  for (const [label, make, message] of bad) {
    it(`bad input: ${label} → 422 with its message, nothing stored`, async () => {
      const { user } = await makeUser(f.db, 'alice');
      const web = await signedIn('alice');
      const { csrf, options } = await registrationOptions(web);
      const made = make(key(), options as never);
      const res = await web.post(`${PAGE}/webauthn`, {
        authenticity_token: csrf,
        name: 'Key',
        credential: typeof made === 'string' ? made : JSON.stringify(made),
      });
      expect(res.statusCode).toBe(422);
      expect(res.body).toContain(message.replace(/"/g, '&quot;'));
      expect(await credentialsOf(user.id)).toEqual([]);
    });
  }

  it('a challenge is single use, expires after five minutes, and belongs to the session that asked', async () => {
    const { user } = await makeUser(f.db, 'alice');
    const web = await signedIn('alice');
    const other = await signedIn('alice');
    const authenticator = key();
    const { csrf, options } = await registrationOptions(web);
    const credential = JSON.stringify(authenticator.create(options));
    expect((await web.post(`${PAGE}/webauthn`, { authenticity_token: csrf, name: 'One', credential })).statusCode).toBe(
      303,
    );
    // The same response again: its challenge is spent.
    const replay = await web.post(`${PAGE}/webauthn`, { authenticity_token: csrf, name: 'Two', credential });
    expect(replay.statusCode).toBe(422);
    expect(replay.body).toContain('This registration has expired or was already used. Try again.');
    // Expired.
    const late = await registrationOptions(web);
    await f.db
      .updateTable('webauthn_challenges')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .execute();
    const expired = await web.post(`${PAGE}/webauthn`, {
      authenticity_token: late.csrf,
      name: 'Late',
      credential: JSON.stringify(key().create(late.options)),
    });
    expect(expired.statusCode).toBe(422);
    expect(expired.body).toContain('This registration has expired or was already used. Try again.');
    // Another session of the same person cannot use this session's challenge.
    const mine = await registrationOptions(web);
    const otherCsrf = WebClient.csrf((await other.get(PAGE)).body);
    const stolen = await other.post(`${PAGE}/webauthn`, {
      authenticity_token: otherCsrf,
      name: 'Stolen',
      credential: JSON.stringify(key().create(mine.options)),
    });
    expect(stolen.statusCode).toBe(422);
    expect((await credentialsOf(user.id)).map((c) => c.name)).toEqual(['One']);
  });

  it('a name is needed: 422 with the summary and the message at the name field; nothing added', async () => {
    const { user } = await makeUser(f.db, 'alice');
    const web = await signedIn('alice');
    const csrf = WebClient.csrf((await web.get(PAGE)).body);
    for (const [name, message] of [
      ['  ', 'Enter a name for your passkey or security key'],
      ['x'.repeat(101), 'Name must be 100 characters or fewer'],
    ]) {
      const res = await web.post(`${PAGE}/webauthn`, { authenticity_token: csrf, name, credential: '' });
      expect(res.statusCode).toBe(422);
      expect(res.body).toContain(
        `<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#webauthn_name">${message}</a></li></ul>`,
      );
      expect(res.body).toContain('aria-invalid="true" aria-describedby="webauthn_name-hint webauthn_name-error"');
      // Only the summary takes focus.
      expect(res.body.match(/ autofocus/g)).toHaveLength(1);
      expect(res.body).toContain('tabindex="-1" autofocus>');
    }
    expect(await credentialsOf(user.id)).toEqual([]);
  });

  it('a key registered to another account cannot be registered again', async () => {
    await makeUser(f.db, 'alice');
    const { user: bob } = await makeUser(f.db, 'bob');
    const alice = await signedIn('alice');
    const { csrf, options } = await registrationOptions(alice);
    const authenticator = key();
    const made = authenticator.create(options);
    await alice.post(`${PAGE}/webauthn`, { authenticity_token: csrf, name: 'K', credential: JSON.stringify(made) });
    // Bob's session presents a registration with Alice's credential id and his own challenge.
    const bobWeb = await signedIn('bob');
    const bobs = await registrationOptions(bobWeb);
    // The same authenticator answers again with the same credential (Alice's id and key).
    const again = authenticator.create(bobs.options, { reuse: 0 });
    expect(again.id).toBe(made.id);
    const res = await bobWeb.post(`${PAGE}/webauthn`, {
      authenticity_token: bobs.csrf,
      name: 'K',
      credential: JSON.stringify(again),
    });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('This passkey or security key is already registered.');
    expect(await credentialsOf(bob.id)).toEqual([]);
  });
});

describe('sign-in with a security key after the password', () => {
  it('asks for the key (with a recovery code instead), signs in, amr pwd+hwk+user+mfa, acr phrh', async () => {
    const { user } = await makeUser(f.db, 'alice');
    const authenticator = key();
    await register(await signedIn('alice'), authenticator, 'Blue key');
    const { web, page } = await passwordStep('alice');
    expect(page).toContain('Use your passkey or security key');
    expect(page).toContain('<summary>Use a recovery code instead</summary>');
    const { csrf, options } = await signInOptions(web, 'second_factor', page);
    expect(options.rpId).toBe(RP_ID);
    expect(options.allowCredentials).toEqual([
      { id: authenticator.credentials[0].id.toString('base64url'), type: 'public-key', transports: ['internal'] },
    ]);
    const res = await assert(web, csrf, 'second_factor', authenticator.get(options));
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/-/profile');
    const [stored] = await credentialsOf(user.id);
    expect(stored.sign_count).toBe(1);
    expect(stored.last_used_at).toBeInstanceOf(Date);
    const payload = await idTokenOf(web);
    expect(payload.amr).toEqual(['pwd', 'hwk', 'user', 'mfa']);
    expect(payload.acr).toBe('phrh');
  });

  it('with TOTP too: "Use a TOTP or recovery code instead", and the TOTP code gives amr pwd+otp+mfa', async () => {
    const { otp } = await makeUser(f.db, 'alice', { twoFactor: true });
    await register(await signedIn2fa('alice', otp), key(), 'Key');
    const { web, page } = await passwordStep('alice');
    expect(page).toContain('<summary>Use a TOTP or recovery code instead</summary>');
    const res = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(page),
      'user[otp_attempt]': otp(Date.now() + 30_000),
    });
    expect(res.statusCode).toBe(302);
    const payload = await idTokenOf(web);
    expect(payload.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(payload.acr).toBe('mfa');
  });

  it('a recovery code instead: a wrong one shows the key step again with the error; a right one signs in', async () => {
    await makeUser(f.db, 'alice');
    const web0 = await signedIn('alice');
    await register(web0, key(), 'Key');
    const codes = [...(await web0.get(PAGE)).body.matchAll(/<code class="secret">([0-9a-f]{16})<\/code>/g)].map(
      (m) => m[1],
    );
    expect(codes).toHaveLength(10);
    const { web, page } = await passwordStep('alice');
    const wrong = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(page),
      'user[otp_attempt]': '0000000000000000',
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).toContain('Use your passkey or security key');
    // No TOTP here: the words are about recovery codes; the code's section is open, its field marked.
    expect(wrong.body).toContain(
      '<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#user_otp_attempt">The code is not correct. Enter one of your recovery codes that you have not used yet</a></li></ul>',
    );
    expect(wrong.body).toContain('<details class="other-factor" open>');
    expect(wrong.body).toContain('aria-invalid="true" aria-describedby="user_otp_attempt-hint user_otp_attempt-error"');
    const right = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(wrong.body),
      'user[otp_attempt]': codes[0],
    });
    expect(right.statusCode).toBe(302);
    expect((await idTokenOf(web)).amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  it("another account's key is refused for this one, counted as a failure", async () => {
    const { user: alice } = await makeUser(f.db, 'alice');
    await makeUser(f.db, 'bob');
    await register(await signedIn('alice'), key(), 'Alice key');
    const bobsKey = key();
    await register(await signedIn('bob'), bobsKey, 'Bob key');
    const { web, page } = await passwordStep('alice');
    const { csrf, options } = await signInOptions(web, 'second_factor', page);
    const before = await addressFailures();
    const res = await assert(web, csrf, 'second_factor', bobsKey.get(options));
    expect(res.statusCode).toBe(401);
    expect(alertOf(res.body)).toBe('This passkey or security key belongs to another account.');
    expect(await addressFailures()).toBe(before + 1);
    expect((await web.get('/profile/applications')).statusCode).toBe(302);
    expect(await failedAttempts(alice.id)).toBe(0);
  });

  it('a replayed assertion is refused (its challenge is spent), and the counter cannot go backwards', async () => {
    const { user } = await makeUser(f.db, 'alice');
    const authenticator = key();
    await register(await signedIn('alice'), authenticator, 'Key');
    const first = await passwordStep('alice');
    const o1 = await signInOptions(first.web, 'second_factor', first.page);
    const assertion = authenticator.get(o1.options);
    expect((await assert(first.web, o1.csrf, 'second_factor', assertion)).statusCode).toBe(302);
    // The same assertion again, in a new password step.
    const second = await passwordStep('alice');
    const o2 = await signInOptions(second.web, 'second_factor', second.page);
    const replay = await assert(second.web, o2.csrf, 'second_factor', assertion);
    expect(replay.statusCode).toBe(401);
    expect(alertOf(replay.body)).toBe('This sign-in request has expired or was already used. Try again.');
    // A fresh challenge, but the counter back at 1 (a cloned key).
    const o3 = await signInOptions(second.web, 'second_factor', second.page);
    const cloned = await assert(second.web, o3.csrf, 'second_factor', authenticator.get(o3.options, { counter: 1 }));
    expect(cloned.statusCode).toBe(401);
    expect(alertOf(cloned.body)).toBe(
      'This security key’s signature counter went backwards: it may have been copied. Sign in another way.',
    );
    expect((await credentialsOf(user.id))[0].sign_count).toBe(1);
    expect(await failedAttempts(user.id)).toBe(1);
  });

  const forged: Array<[string, (a: SoftAuthenticator, o: never) => unknown, string]> = [
    ['garbage', () => 'garbage', 'The browser sent no valid passkey response. Try again.'],
    [
      'another origin',
      (a, o) => a.get(o, { origin: 'https://lanyard.example.com.evil.example' }),
      'The passkey or security key could not be verified.',
    ],
    [
      'a tampered clientDataJSON',
      (a, o) => {
        const r = a.get(o) as { response: { clientDataJSON: string } };
        const data = JSON.parse(Buffer.from(r.response.clientDataJSON, 'base64url').toString());
        r.response.clientDataJSON = Buffer.from(JSON.stringify({ ...data, crossOrigin: true, extra: 1 })).toString(
          'base64url',
        );
        return r;
      },
      'The passkey or security key could not be verified.',
    ],
    [
      'an unknown credential id',
      (a, o) => a.get(o, { credentialId: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
      'This passkey or security key is not registered here.',
    ],
    [
      'a forged challenge',
      (a, o) => a.get(o, { challenge: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
      'This sign-in request has expired or was already used. Try again.',
    ],
  ];
  for (const [label, make, message] of forged) {
    it(`bad input: ${label} → 401 with its message, not signed in, one failure counted`, async () => {
      const { user } = await makeUser(f.db, 'alice');
      const authenticator = key();
      await register(await signedIn('alice'), authenticator, 'Key');
      const { web, page } = await passwordStep('alice');
      const { csrf, options } = await signInOptions(web, 'second_factor', page);
      const before = await addressFailures();
      const res = await assert(web, csrf, 'second_factor', make(authenticator, options as never));
      expect(res.statusCode).toBe(401);
      expect(alertOf(res.body)).toBe(message);
      expect(await addressFailures()).toBe(before + 1);
      expect((await web.get('/profile/applications')).statusCode).toBe(302);
      expect((await credentialsOf(user.id))[0].sign_count).toBe(0);
    });
  }

  it('an expired challenge is refused', async () => {
    await makeUser(f.db, 'alice');
    const authenticator = key();
    await register(await signedIn('alice'), authenticator, 'Key');
    const { web, page } = await passwordStep('alice');
    const { csrf, options } = await signInOptions(web, 'second_factor', page);
    await f.db
      .updateTable('webauthn_challenges')
      .set({ expires_at: new Date(Date.now() - 1) })
      .execute();
    const res = await assert(web, csrf, 'second_factor', authenticator.get(options));
    expect(res.statusCode).toBe(401);
    expect(alertOf(res.body)).toBe('This sign-in request has expired or was already used. Try again.');
  });

  it('without a password step, second-factor options are refused (401 JSON)', async () => {
    const web = new WebClient(f.app);
    const { res } = await signInOptions(web, 'second_factor');
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ message: 'Your sign-in took too long. Sign in again.' });
  });
});

async function signedIn2fa(username: string, otp: (at?: number) => string) {
  const web = new WebClient(f.app);
  const res = await web.signIn(username, PASSWORD, () => otp());
  expect(res.statusCode).toBe(302);
  return web;
}

describe('passwordless', () => {
  it('a passkey with user verification signs in alone: amr swk+user+mfa, acr phr', async () => {
    const { user } = await makeUser(f.db, 'alice');
    const passkey = key({ backupEligible: true });
    await register(await signedIn('alice'), passkey, 'Phone');
    const web = new WebClient(f.app);
    const page = await web.get('/users/sign_in');
    expect(page.body).toContain('autocomplete="username webauthn"');
    expect(page.body).toContain('Sign in with a passkey');
    const { csrf, options } = await signInOptions(web, 'passwordless', page.body);
    expect(options.allowCredentials).toEqual([]);
    expect(options.userVerification).toBe('required');
    const res = await assert(web, csrf, 'passwordless', passkey.get(options));
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/-/profile');
    const payload = await idTokenOf(web);
    expect(payload.sub).toBe(String(user.id));
    expect(payload.amr).toEqual(['swk', 'user', 'mfa']);
    expect(payload.acr).toBe('phr');
  });

  it('50 forged passkey assertions at once, 40 failures already counted: 20 evaluated, 30 × 429', async () => {
    await makeUser(f.db, 'alice');
    const passkey = key({ backupEligible: true });
    await register(await signedIn('alice'), passkey, 'Phone');
    const web = new WebClient(f.app);
    const { csrf, options } = await signInOptions(web, 'passwordless');
    // app.inject's client address; the one counter row left at the end proves it is the key.
    const address = 'failures:addr:127.0.0.1';
    await f.db
      .insertInto('rate_limit_counters')
      .values({ key: address, window_start: new Date(), count: 40 })
      .execute();
    const forgedAssertion = passkey.get(options, { credentialId: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => assert(web, csrf, 'passwordless', forgedAssertion)),
    );
    const tally: Record<number, number> = {};
    for (const r of responses) tally[r.statusCode] = (tally[r.statusCode] ?? 0) + 1;
    expect(tally).toEqual({ 401: 20, 429: 30 });
    for (const r of responses.filter((r) => r.statusCode === 429)) {
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    expect(await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).execute()).toEqual([
      { key: address, count: 60 },
    ]);
    expect((await web.get('/-/profile')).statusCode).toBe(302);
  });

  it('without user verification: refused', async () => {
    await makeUser(f.db, 'alice');
    const passkey = key({ backupEligible: true });
    await register(await signedIn('alice'), passkey, 'Phone');
    const web = new WebClient(f.app);
    const { csrf, options } = await signInOptions(web, 'passwordless');
    const res = await assert(web, csrf, 'passwordless', passkey.get(options, { uv: false }));
    expect(res.statusCode).toBe(401);
    expect(alertOf(res.body)).toBe('The passkey or security key could not be verified.');
    expect((await web.get('/profile/applications')).statusCode).toBe(302);
  });

  it('a changed backup eligibility is refused', async () => {
    await makeUser(f.db, 'alice');
    const passkey = key({ backupEligible: true });
    await register(await signedIn('alice'), passkey, 'Phone');
    const web = new WebClient(f.app);
    const { csrf, options } = await signInOptions(web, 'passwordless');
    const res = await assert(web, csrf, 'passwordless', passkey.get(options, { be: false }));
    expect(res.statusCode).toBe(401);
    expect(alertOf(res.body)).toBe(
      'This passkey’s backup eligibility changed: it may not be the one registered. Sign in another way.',
    );
  });

  it("a blocked user's passkey never signs in", async () => {
    await makeUser(f.db, 'alice');
    const passkey = key({ backupEligible: true });
    await register(await signedIn('alice'), passkey, 'Phone');
    await setUserState(f.db, 'alice', 'blocked');
    const web = new WebClient(f.app);
    const { csrf, options } = await signInOptions(web, 'passwordless');
    const res = await assert(web, csrf, 'passwordless', passkey.get(options));
    expect(res.statusCode).toBe(401);
    expect(alertOf(res.body)).toBe('This account is blocked.');
    expect((await web.get('/profile/applications')).statusCode).toBe(302);
  });

  it('a second-factor challenge cannot be used passwordless', async () => {
    await makeUser(f.db, 'alice');
    const passkey = key({ backupEligible: true });
    await register(await signedIn('alice'), passkey, 'Phone');
    const { web, page } = await passwordStep('alice');
    const { options } = await signInOptions(web, 'second_factor', page);
    const fresh = new WebClient(f.app);
    const csrf = WebClient.csrf((await fresh.get('/users/sign_in')).body);
    const res = await assert(fresh, csrf, 'passwordless', passkey.get(options));
    expect(res.statusCode).toBe(401);
    expect(alertOf(res.body)).toBe('This sign-in request has expired or was already used. Try again.');
  });
});

describe('rename and remove', () => {
  it('renames; removes with the current password (wrong → 422, kept); a removed key is refused', async () => {
    const { user } = await makeUser(f.db, 'alice');
    const passkey = key({ backupEligible: true });
    const web = await signedIn('alice');
    await register(web, passkey, 'Phone');
    const { id } = await f.db
      .selectFrom('webauthn_credentials')
      .select('id')
      .where('user_id', '=', user.id)
      .executeTakeFirstOrThrow();
    let csrf = WebClient.csrf((await web.get(PAGE)).body);
    const renamed = await web.post(`${PAGE}/webauthn/${id}/rename`, {
      authenticity_token: csrf,
      name: '  Work phone ',
    });
    expect(renamed.statusCode).toBe(303);
    expect((await credentialsOf(user.id))[0].name).toBe('Work phone');
    const blank = await web.post(`${PAGE}/webauthn/${id}/rename`, { authenticity_token: csrf, name: '   ' });
    expect(blank.statusCode).toBe(422);
    expect(blank.body).toContain(
      `<li><a href="#webauthn_rename_${id}">Enter a name for your passkey or security key</a></li>`,
    );
    expect(blank.body).toContain(
      `<span class="field-error" id="webauthn_rename_${id}-error"><span class="visually-hidden">Error: </span>Enter a name for your passkey or security key</span>`,
    );
    const long = await web.post(`${PAGE}/webauthn/${id}/rename`, { authenticity_token: csrf, name: 'x'.repeat(101) });
    expect(long.statusCode).toBe(422);
    expect(long.body).toContain(`<li><a href="#webauthn_rename_${id}">Name must be 100 characters or fewer</a></li>`);
    expect((await credentialsOf(user.id))[0].name).toBe('Work phone');
    const wrong = await web.post(`${PAGE}/webauthn/${id}/delete`, {
      authenticity_token: csrf,
      current_password: 'wrong password',
    });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.body).toContain(
      `<li><a href="#webauthn_remove_${id}">The current password is not correct. Enter your current password</a></li>`,
    );
    expect(await credentialsOf(user.id)).toHaveLength(1);
    const notMine = await web.post(`${PAGE}/webauthn/999999/delete`, {
      authenticity_token: csrf,
      current_password: PASSWORD,
    });
    expect(notMine.statusCode).toBe(404);
    csrf = WebClient.csrf((await web.get(PAGE)).body);
    const removed = await web.post(`${PAGE}/webauthn/${id}/delete`, {
      authenticity_token: csrf,
      current_password: PASSWORD,
    });
    expect(removed.statusCode).toBe(303);
    expect(await credentialsOf(user.id)).toEqual([]);
    // The last second factor gone: no recovery codes, 2FA off.
    expect(await f.db.selectFrom('user_recovery_codes').select('id').where('user_id', '=', user.id).execute()).toEqual(
      [],
    );
    const row = await f.db
      .selectFrom('users')
      .select('webauthn_credential_count')
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(row.webauthn_credential_count).toBe(0);
    // Its assertion now: not registered here.
    const fresh = new WebClient(f.app);
    const o = await signInOptions(fresh, 'passwordless');
    const res = await assert(fresh, o.csrf, 'passwordless', passkey.get(o.options));
    expect(res.statusCode).toBe(401);
    expect(alertOf(res.body)).toBe('This passkey or security key is not registered here.');
  });
});
