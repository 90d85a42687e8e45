// The device authorization grant (RFC 8628) through the real app: POST /oauth/authorize_device,
// every polling answer of POST /oauth/token with its exact body, the /oauth/device page (sign-in
// round trip, case- and dash-insensitive codes, CSRF, approve and deny), concurrent polls, the
// guess limits, and bad input changing nothing.
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { lockDeviceGrant, markDeviceGrantUsed } from '../../service/domain/device-grants';
import { resetDatabase } from '../support/db';
import { WebClient } from './support/browser-like';
import { errorBody } from './support/contract';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, useFixture } from './support/harness';

// A pool big enough that concurrent polls really run in parallel transactions.
const f = useFixture({ max: 20 });

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
// RFC 8628 §3.5's definitions (Doorkeeper's locale has none; GitLab's server_error fallback says nothing).
const DEVICE_DESCRIPTIONS: Record<string, string> = {
  authorization_pending:
    "The authorization request is still pending as the end user hasn't yet completed the user-interaction steps.",
  slow_down:
    'The authorization request is still pending and polling should continue, but the interval must be increased by 5 seconds for this and all subsequent requests.',
  expired_token: 'The device_code has expired, and the device authorization session has concluded.',
};
const deviceError = (error: string) => ({ error, error_description: DEVICE_DESCRIPTIONS[error] });
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

const post = (url: string, values: Record<string, string | undefined>, headers: Record<string, string> = {}) =>
  f.app.inject({ method: 'POST', url, headers: { ...FORM, ...headers }, payload: form(values) });
const poll = (clientId: string, deviceCode: string | undefined, headers: Record<string, string> = {}) =>
  post('/oauth/token', { grant_type: DEVICE_GRANT, client_id: clientId, device_code: deviceCode }, headers);

async function authorizeDevice(clientId: string, scope?: string) {
  const res = await post('/oauth/authorize_device', { client_id: clientId, scope });
  expect(res.statusCode).toBe(200);
  return res.json() as { device_code: string; user_code: string; verification_uri_complete: string };
}

/** Pretend the last poll happened `seconds` ago (polling tests must not sleep through the interval). */
const backdatePoll = (seconds: number) =>
  sql`update oauth_device_grants set last_polled_at = now() - make_interval(secs => ${seconds})`.execute(f.db);

const grantRows = () =>
  f.db
    .selectFrom('oauth_device_grants')
    .select(['status', 'user_id', 'interval_seconds', 'scopes', 'device_code_digest', 'user_code_digest'])
    .execute();

/**
 * Enter a user code on the page, follow the redirect to the consent step (post/redirect/get) and
 * press a button there.
 */
async function decide(web: WebClient, userCode: string, decision: 'authorize' | 'deny') {
  const confirm = await enterCode(web, userCode);
  return web.post('/oauth/device', {
    authenticity_token: WebClient.csrf(confirm.body),
    user_code: userCode,
    decision,
  });
}

/** The code step: 303 to the consent step, whose page (GET) is returned. */
async function enterCode(web: WebClient, typed: string) {
  const page = await web.get('/oauth/device');
  const entered = await web.post('/oauth/device', { authenticity_token: WebClient.csrf(page.body), user_code: typed });
  expect(entered.statusCode).toBe(303);
  expect(entered.headers.location).toBe(`/oauth/device/confirm?${new URLSearchParams({ user_code: typed })}`);
  const confirm = await web.get(entered.headers.location as string);
  expect(confirm.statusCode).toBe(200);
  return confirm;
}

let ctx: Awaited<ReturnType<typeof setup>>;
async function setup() {
  const alice = await makeUser(f.db, 'alice');
  const pub = await makeApp(f.db, { name: 'CLI <tool>', confidential: false, scopes: 'api read_user' });
  const conf = await makeApp(f.db, { name: 'Kiosk', scopes: 'read_user' });
  const web = new WebClient(f.app);
  expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
  return { alice, pub, conf, web };
}

beforeEach(async () => {
  await resetDatabase(f.db);
  ctx = await setup();
});

describe('POST /oauth/authorize_device', () => {
  it('answers a public client with the codes, the verification URIs, 300 s and 5 s; no-store; codes stored hashed', async () => {
    const res = await post('/oauth/authorize_device', { client_id: ctx.pub.clientId, scope: 'read_user' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = res.json();
    expect(Object.keys(body)).toEqual([
      'device_code',
      'user_code',
      'verification_uri',
      'verification_uri_complete',
      'expires_in',
      'interval',
    ]);
    expect(body).toEqual({
      device_code: expect.stringMatching(/^[0-9a-f]{64}$/),
      user_code: expect.stringMatching(USER_CODE),
      verification_uri: `${f.config.publicUrl}/oauth/device`,
      verification_uri_complete: `${f.config.publicUrl}/oauth/device?user_code=${body.user_code}`,
      expires_in: 300,
      interval: 5,
    });
    const rows = await grantRows();
    expect(rows).toHaveLength(1);
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain(body.device_code);
    expect(stored).not.toContain(body.user_code.replace('-', ''));
    expect(rows[0]).toMatchObject({ status: 'pending', user_id: null, interval_seconds: 5, scopes: ['read_user'] });
  });

  it('grants all of the application scopes when scope is omitted', async () => {
    await authorizeDevice(ctx.pub.clientId);
    expect((await grantRows())[0].scopes).toEqual(['api', 'read_user']);
  });

  it('authenticates a confidential client as the token endpoint does', async () => {
    const ok = await post('/oauth/authorize_device', {}, { authorization: basic(ctx.conf.clientId, ctx.conf.secret!) });
    expect(ok.statusCode).toBe(200);
    const noSecret = await post('/oauth/authorize_device', { client_id: ctx.conf.clientId });
    expect({ status: noSecret.statusCode, body: noSecret.json() }).toEqual({
      status: 401,
      body: errorBody('invalid_client'),
    });
    const wrong = await post('/oauth/authorize_device', {}, { authorization: basic(ctx.conf.clientId, 'nope') });
    expect({ status: wrong.statusCode, body: wrong.json() }).toEqual({
      status: 401,
      body: errorBody('invalid_client'),
    });
    expect(wrong.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    expect(await grantRows()).toHaveLength(1);
  });

  it('refuses an unknown or missing client and bad scopes; nothing is stored', async () => {
    for (const [values, status, error] of [
      [{ client_id: 'no-such-client' }, 401, 'invalid_client'],
      [{ scope: 'read_user' }, 401, 'invalid_client'],
      [{ client_id: ctx.pub.clientId, scope: 'sudo' }, 400, 'invalid_scope'],
      [{ client_id: ctx.pub.clientId, scope: 'read_api' }, 400, 'invalid_scope'],
    ] as const) {
      const res = await post('/oauth/authorize_device', values);
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status,
        body: errorBody(error),
      });
      expect(res.headers['cache-control']).toBe('no-store');
    }
    const repeated = await f.app.inject({
      method: 'POST',
      url: '/oauth/authorize_device',
      headers: FORM,
      payload: `client_id=${ctx.pub.clientId}&scope=api&scope=read_user`,
    });
    expect({ status: repeated.statusCode, body: repeated.json() }).toEqual({
      status: 400,
      body: errorBody('invalid_request'),
    });
    expect(await grantRows()).toHaveLength(0);
  });

  it('is advertised in the metadata with the grant type', async () => {
    const res = await f.app.inject({ url: '/.well-known/oauth-authorization-server' });
    const meta = res.json();
    expect(meta.device_authorization_endpoint).toBe(`${f.config.publicUrl}/oauth/authorize_device`);
    expect(meta.grant_types_supported).toContain(DEVICE_GRANT);
  });
});

describe('polling POST /oauth/token', () => {
  it('pending, slow_down (+5 s each time), pending again after the wider interval, then tokens once', async () => {
    const { device_code, user_code } = await authorizeDevice(ctx.pub.clientId, 'read_user');
    const first = await poll(ctx.pub.clientId, device_code);
    expect({ status: first.statusCode, body: first.json() }).toEqual({
      status: 400,
      body: deviceError('authorization_pending'),
    });
    expect(first.headers['cache-control']).toBe('no-store');

    const tooSoon = await poll(ctx.pub.clientId, device_code);
    expect({ status: tooSoon.statusCode, body: tooSoon.json() }).toEqual({
      status: 400,
      body: deviceError('slow_down'),
    });
    expect((await grantRows())[0].interval_seconds).toBe(10);
    // 6 s later is past the old interval but not the new one.
    await backdatePoll(6);
    expect((await poll(ctx.pub.clientId, device_code)).json()).toEqual(deviceError('slow_down'));
    expect((await grantRows())[0].interval_seconds).toBe(15);
    await backdatePoll(16);
    expect((await poll(ctx.pub.clientId, device_code)).json()).toEqual(deviceError('authorization_pending'));

    const done = await decide(ctx.web, user_code, 'authorize');
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe('/oauth/device/authorized');
    expect(done.headers['cache-control']).toBe('no-store');
    expect((await grantRows())[0]).toMatchObject({ status: 'approved', user_id: ctx.alice.user.id });

    await backdatePoll(16);
    const tokens = await poll(ctx.pub.clientId, device_code);
    expect(tokens.statusCode).toBe(200);
    expect(tokens.headers['cache-control']).toBe('no-store');
    const body = tokens.json();
    expect(Object.keys(body)).toEqual([
      'access_token',
      'token_type',
      'expires_in',
      'refresh_token',
      'scope',
      'created_at',
    ]);
    expect(body).toEqual({
      access_token: expect.stringMatching(/^[0-9a-f]{64}$/),
      token_type: 'bearer',
      expires_in: 7200,
      refresh_token: expect.stringMatching(/^[0-9a-f]{64}$/),
      scope: 'read_user',
      created_at: expect.any(Number),
    });
    const me = await f.app.inject({ url: '/api/v4/user', headers: { authorization: `Bearer ${body.access_token}` } });
    expect(me.statusCode).toBe(200);
    expect(me.json().username).toBe('alice');
    const refreshed = await post('/oauth/token', {
      grant_type: 'refresh_token',
      client_id: ctx.pub.clientId,
      refresh_token: body.refresh_token,
    });
    expect(refreshed.statusCode).toBe(200);

    // The device code is spent: a reuse (even after the interval) is invalid_grant.
    await backdatePoll(60);
    const again = await poll(ctx.pub.clientId, device_code);
    expect({ status: again.statusCode, body: again.json() }).toEqual({ status: 400, body: errorBody('invalid_grant') });
    expect((await grantRows())[0].status).toBe('used');
  });

  it('with openid, an ID token for this client: no nonce; auth_time and amr of the approving session', async () => {
    const oidc = await makeApp(f.db, { name: 'OIDC CLI', confidential: false, scopes: 'openid read_user' });
    const { device_code, user_code } = await authorizeDevice(oidc.clientId, 'openid read_user');
    // The user's latest sign-in is another browser's: the ID token must not take its time.
    const elsewhere = new Date('2020-01-01T00:00:00Z');
    await f.db
      .updateTable('users')
      .set({ current_sign_in_at: elsewhere })
      .where('id', '=', ctx.alice.user.id)
      .execute();
    expect((await decide(ctx.web, user_code, 'authorize')).statusCode).toBe(303);
    const res = await poll(oidc.clientId, device_code);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.scope).toBe('openid read_user');
    expect(body.id_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const claims = JSON.parse(Buffer.from(body.id_token.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ iss: f.config.publicUrl, aud: oidc.clientId, sub: String(ctx.alice.user.id) });
    expect(claims.nonce).toBeUndefined();
    // ctx.web signed in with a password alone, minutes ago at most (RFC 8176).
    expect([claims.amr, claims.acr]).toEqual([['pwd'], 'pwd']);
    expect(claims.auth_time).toBeGreaterThan(Math.floor(Date.now() / 1000) - 300);
    expect(claims.auth_time).toBeLessThanOrEqual(claims.iat);
  });

  it('concurrent polls after approval: exactly one token response, the others invalid_grant', async () => {
    const { device_code, user_code } = await authorizeDevice(ctx.pub.clientId);
    expect((await decide(ctx.web, user_code, 'authorize')).statusCode).toBe(303);
    const results = await Promise.all(Array.from({ length: 6 }, () => poll(ctx.pub.clientId, device_code)));
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, 400, 400, 400, 400, 400]);
    for (const r of results.filter((r) => r.statusCode === 400)) expect(r.json()).toEqual(errorBody('invalid_grant'));
    const tokens = await f.db.selectFrom('oauth_access_tokens').select('id').execute();
    expect(tokens).toHaveLength(1);
  });

  it('a poll waits on PostgreSQL for a transaction holding the approved code, then finds it used', async () => {
    const { device_code, user_code } = await authorizeDevice(ctx.pub.clientId);
    expect((await decide(ctx.web, user_code, 'authorize')).statusCode).toBe(303);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => {
      locked = r;
    });
    const holder = f.db.transaction().execute(async (trx) => {
      const row = await lockDeviceGrant(trx, device_code);
      await markDeviceGrantUsed(trx, row!.id, new Date());
      locked();
      await held;
    });
    await isLocked;
    const pending = poll(ctx.pub.clientId, device_code);
    for (let i = 0; ; i++) {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query ilike '%for update%'`.execute(f.db);
      if (rows[0].n === 1) break;
      if (i > 200) throw new Error('the poll never waited on the lock');
      await new Promise((r) => setTimeout(r, 10));
    }
    release();
    await holder;
    const res = await pending;
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: errorBody('invalid_grant') });
    expect(await f.db.selectFrom('oauth_access_tokens').select('id').execute()).toHaveLength(0);
  });

  it('a denied code answers access_denied until it expires, then expired_token; no token is issued', async () => {
    const { device_code, user_code } = await authorizeDevice(ctx.pub.clientId);
    const denied = await decide(ctx.web, user_code, 'deny');
    expect(denied.statusCode).toBe(303);
    expect(denied.headers.location).toBe('/oauth/device/denied');
    const page = await ctx.web.get('/oauth/device/denied');
    expect(page.body).toContain('Device authorization denied');
    for (let i = 0; i < 2; i++) {
      const res = await poll(ctx.pub.clientId, device_code);
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: errorBody('access_denied') });
    }
    await sql`update oauth_device_grants set expires_at = now() - interval '1 second'`.execute(f.db);
    expect((await poll(ctx.pub.clientId, device_code)).json()).toEqual(deviceError('expired_token'));
    expect(await f.db.selectFrom('oauth_access_tokens').select('id').execute()).toHaveLength(0);
  });

  it('an expired code answers expired_token and can no longer be approved', async () => {
    const { device_code, user_code } = await authorizeDevice(ctx.pub.clientId);
    await sql`update oauth_device_grants set expires_at = now() - interval '1 second'`.execute(f.db);
    const res = await poll(ctx.pub.clientId, device_code);
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: deviceError('expired_token') });
    const page = await ctx.web.get('/oauth/device');
    const entered = await ctx.web.post('/oauth/device', {
      authenticity_token: WebClient.csrf(page.body),
      user_code,
      decision: 'authorize',
    });
    expect(entered.statusCode).toBe(400);
    expect(entered.body).toContain(
      '<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#user_code">That code has expired. Start again on your device to get a new code</a></li></ul>',
    );
    expect((await grantRows())[0]).toMatchObject({ status: 'pending', user_id: null });
    await backdatePoll(60);
    expect((await poll(ctx.pub.clientId, device_code)).json()).toEqual(deviceError('expired_token'));
  });

  it('refuses another client, a garbage or missing device code, and a confidential client without its secret', async () => {
    const { device_code, user_code } = await authorizeDevice(ctx.pub.clientId);
    const other = await makeApp(f.db, { name: 'Other', confidential: false });
    const cases: Array<[Awaited<ReturnType<typeof poll>>, number, object]> = [
      [await poll(other.clientId, device_code), 400, errorBody('invalid_grant')],
      [await poll(ctx.pub.clientId, 'garbage'), 400, errorBody('invalid_grant')],
      [await poll(ctx.pub.clientId, undefined), 400, errorBody('invalid_request')],
      [await post('/oauth/token', { grant_type: DEVICE_GRANT, device_code }), 401, errorBody('invalid_client')],
    ];
    for (const [res, status, body] of cases)
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status, body });
    // None of these counted as a poll of the real code.
    expect((await poll(ctx.pub.clientId, device_code)).json()).toEqual(deviceError('authorization_pending'));

    const conf = await authorizeDeviceConfidential();
    const noSecret = await poll(ctx.conf.clientId, conf);
    expect({ status: noSecret.statusCode, body: noSecret.json() }).toEqual({
      status: 401,
      body: errorBody('invalid_client'),
    });
    const withSecret = await post(
      '/oauth/token',
      { grant_type: DEVICE_GRANT, device_code: conf },
      { authorization: basic(ctx.conf.clientId, ctx.conf.secret!) },
    );
    expect(withSecret.json()).toEqual(deviceError('authorization_pending'));
    expect(user_code).toMatch(USER_CODE);
  });
});

async function authorizeDeviceConfidential(): Promise<string> {
  const res = await post('/oauth/authorize_device', {}, { authorization: basic(ctx.conf.clientId, ctx.conf.secret!) });
  expect(res.statusCode).toBe(200);
  return res.json().device_code;
}

describe('the /oauth/device page', () => {
  it('sends a signed-out visitor to sign in and back to the pre-filled form', async () => {
    const { user_code, verification_uri_complete } = await authorizeDevice(ctx.pub.clientId);
    const web = new WebClient(f.app);
    const path = new URL(verification_uri_complete).pathname + new URL(verification_uri_complete).search;
    const first = await web.get(path);
    expect(first.statusCode).toBe(302);
    expect(first.headers.location).toBe('/users/sign_in');
    const signedIn = await web.signIn('alice', PASSWORD);
    expect(signedIn.headers.location).toBe(`/oauth/device?user_code=${user_code}`);
    const page = await web.get(signedIn.headers.location as string);
    expect(page.statusCode).toBe(200);
    expect(page.headers['x-frame-options']).toBe('DENY');
    const input = /<input [^>]*id="user_code"[^>]*>/.exec(page.body)?.[0];
    expect(input).toContain(`name="user_code"`);
    expect(input).toContain(`value="${user_code}"`);
    expect(input).toContain('autocomplete="off"');
    expect(page.body).toContain('<label for="user_code">Enter the code displayed on your device</label>');
  });

  it('takes the code in any case and without the dash, and shows the application and its scopes in words', async () => {
    const { user_code } = await authorizeDevice(ctx.pub.clientId, 'read_user');
    const typed = user_code.replace('-', '').toLowerCase();
    const confirm = await enterCode(ctx.web, ` ${typed} `);
    expect(confirm.headers['x-frame-options']).toBe('DENY');
    expect(confirm.body).toContain('<strong>CLI &lt;tool&gt;</strong> is requesting access to your account.');
    expect(confirm.body).toContain('<p id="application-owner" class="muted">Registered by the administrator</p>');
    expect(confirm.body).toContain(
      '<ul id="scopes" class="scope-list"><li data-scope="read_user">Read your profile: your name, username and e-mail addresses</li></ul>',
    );
    expect(confirm.body).toContain('Only allow applications you trust.');
    // One button style in both flows: Authorize primary, Deny secondary, apart in one .actions row.
    expect(confirm.body).toContain(
      '<div class="actions consent-actions"><button type="submit" class="button primary" name="decision" value="authorize">Authorize</button><button type="submit" class="button" name="decision" value="deny">Deny</button></div>',
    );
    // A reload of the consent step shows it again and decides nothing.
    expect((await ctx.web.get(`/oauth/device/confirm?user_code=${encodeURIComponent(` ${typed} `)}`)).statusCode).toBe(
      200,
    );
    // Nothing is decided by entering the code.
    expect((await grantRows())[0].status).toBe('pending');
    const done = await ctx.web.post('/oauth/device', {
      authenticity_token: WebClient.csrf(confirm.body),
      user_code: typed,
      decision: 'authorize',
    });
    expect(done.statusCode).toBe(303);
    const result = await ctx.web.get('/oauth/device/authorized');
    expect(result.body).toContain('Device successfully authorized');
  });

  it('refuses a post without the CSRF token: 422, nothing changed', async () => {
    const { user_code } = await authorizeDevice(ctx.pub.clientId);
    const res = await ctx.web.post('/oauth/device', { user_code, decision: 'authorize' });
    expect(res.statusCode).toBe(422);
    expect((await grantRows())[0]).toMatchObject({ status: 'pending', user_id: null });
  });

  it('a code cannot be decided twice', async () => {
    const { user_code } = await authorizeDevice(ctx.pub.clientId);
    expect((await decide(ctx.web, user_code, 'deny')).statusCode).toBe(303);
    const page = await ctx.web.get('/oauth/device');
    const again = await ctx.web.post('/oauth/device', {
      authenticity_token: WebClient.csrf(page.body),
      user_code,
      decision: 'authorize',
    });
    expect(again.statusCode).toBe(400);
    expect(again.body).toContain(
      '<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#user_code">That code is not right. Check the code shown on your device and enter it again</a></li></ul>',
    );
    expect((await grantRows())[0].status).toBe('denied');
  });

  it('the consent step checks its code like the form: a wrong one counts and is 400; Back after deciding changes nothing', async () => {
    const { user_code } = await authorizeDevice(ctx.pub.clientId);
    const wrong = await ctx.web.get('/oauth/device/confirm?user_code=BBBB-BBBB');
    expect(wrong.statusCode).toBe(400);
    expect(wrong.body).toContain(
      '<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#user_code">That code is not right. Check the code shown on your device and enter it again</a></li></ul>',
    );
    expect(wrong.body).toContain(
      '<span class="field-error" id="user_code-error"><span class="visually-hidden">Error: </span>That code is not right. Check the code shown on your device and enter it again</span>',
    );
    expect(await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).orderBy('key').execute()).toEqual([
      { key: 'failures:addr:127.0.0.1', count: 1 },
      { key: expect.stringMatching(/^failures:user_code:session:[0-9a-f]{64}$/), count: 1 },
    ]);
    expect((await decide(ctx.web, user_code, 'authorize')).statusCode).toBe(303);
    // The browser's Back lands on the consent step's GET: no form is re-posted, the grant stays approved.
    const back = await ctx.web.get(`/oauth/device/confirm?user_code=${user_code}`);
    expect(back.statusCode).toBe(400);
    expect((await grantRows())[0].status).toBe('approved');
    const signedOut = await new WebClient(f.app).get(`/oauth/device/confirm?user_code=${user_code}`);
    expect(signedOut.statusCode).toBe(302);
    expect(signedOut.headers.location).toBe('/users/sign_in');
  });

  it('5 wrong codes a minute per session: the 6th attempt, even the right code, is 429; another session goes on', async () => {
    const { user_code } = await authorizeDevice(ctx.pub.clientId);
    const page = await ctx.web.get('/oauth/device');
    const csrf = WebClient.csrf(page.body);
    // Nothing typed is no guess: it says what to do and counts nothing.
    const blank = await ctx.web.post('/oauth/device', { authenticity_token: csrf, user_code: '  ' });
    expect(blank.statusCode).toBe(400);
    expect(blank.body).toContain(
      '<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#user_code">Enter the code shown on your device</a></li></ul>',
    );
    expect(await f.db.selectFrom('rate_limit_counters').select('key').execute()).toEqual([]);
    for (const wrong of ['BBBB-BBBB', 'garbage', 'DDDD-DDDD', 'CCCCCCCC', 'AAAA-AAAA']) {
      const res = await ctx.web.post('/oauth/device', { authenticity_token: csrf, user_code: wrong });
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain(
        '<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#user_code">That code is not right. Check the code shown on your device and enter it again</a></li></ul>',
      );
    }
    const blocked = await ctx.web.post('/oauth/device', { authenticity_token: csrf, user_code, decision: 'authorize' });
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(blocked.body).toContain('Too many wrong codes.');
    expect((await grantRows())[0].status).toBe('pending');
    // The address has 5 failures of its 60: another session of the same person is not blocked.
    const other = new WebClient(f.app);
    await other.signIn('alice', PASSWORD);
    expect((await decide(other, user_code, 'authorize')).statusCode).toBe(303);
    const counters = await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).orderBy('key').execute();
    expect(counters).toEqual([
      { key: 'failures:addr:127.0.0.1', count: 5 },
      { key: expect.stringMatching(/^failures:user_code:session:[0-9a-f]{64}$/), count: 5 },
    ]);
  });

  it('an address over the shared credential-failure limit gets 429 before the look-up', async () => {
    const { user_code } = await authorizeDevice(ctx.pub.clientId);
    await f.db
      .insertInto('rate_limit_counters')
      .values({ key: 'failures:addr:127.0.0.1', window_start: new Date(), count: 60 })
      .execute();
    const page = await ctx.web.get('/oauth/device');
    const res = await ctx.web.post('/oauth/device', {
      authenticity_token: WebClient.csrf(page.body),
      user_code,
      decision: 'authorize',
    });
    expect(res.statusCode).toBe(429);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(res.body).toContain(`Too many wrong codes. Try again in ${retryAfter} seconds.`);
    expect((await grantRows())[0].status).toBe('pending');
  });
});
