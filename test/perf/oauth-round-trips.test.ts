// The round trips behind a trusted authorization and its code exchange (issue 15), counted on a
// recording database handle (test/support/statement-counter.ts): a signed-in GET /oauth/authorize
// costs 2 (the application with the session and its user, then the code), the exchange 1 (the
// grant's one statement, which checks the client's secret and its address's throttle too: 2 before
// issue 30, no transaction; a wrong secret, or one from an address with failures in its window,
// takes the statement twice, the second time with the check that counts), with or without `openid`: the signing key is loaded first, the
// statement spends the code and returns its user, the ID token is signed from that row (2 before:
// the statement declined the code, the token was signed, the same statement spent it). Without a
// usable key the statement declines the code and it stays redeemable; a failure after the spend
// revokes what the statement issued.
import type { FastifyInstance } from 'fastify';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { signingKeyPolicy } from '../../service/config';
import { fileSigningKeySource } from '../../service/local/signing-key-file';
import { resetDatabase } from '../support/db';
import { type CountingDb, countingDb } from '../support/statement-counter';
import { authorizeUrl, WebClient } from '../oauth/support/browser-like';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from '../oauth/support/harness';

const f = useFixture();
let counter: CountingDb;
let app: FastifyInstance;
let failSigning = false;
/** How many more key loads succeed (a failure after the spend: the second load, the signing's). */
let loadsBeforeFailure = Number.POSITIVE_INFINITY;
let web: WebClient;
let c: Awaited<ReturnType<typeof makeApp>>;

beforeAll(async () => {
  counter = countingDb(f.handle);
  const keys = fileSigningKeySource(f.config.home, signingKeyPolicy(f.config));
  app = await buildApp({
    db: counter.db,
    config: f.config,
    logger: false,
    signingKeys: {
      load: () => (failSigning || loadsBeforeFailure-- <= 0 ? Promise.reject(new Error('no usable key')) : keys.load()),
    },
  });
  return () => app.close();
});

beforeEach(async () => {
  await resetDatabase(f.db, ['service_keys']);
  failSigning = false;
  loadsBeforeFailure = Number.POSITIVE_INFINITY;
  await makeUser(f.db, 'alice');
  c = await makeApp(f.db, { name: 'Trusted', trusted: true, scopes: 'api openid' });
  web = new WebClient(app);
  expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
});

/** The statements `run` sends. */
async function counting<T>(run: () => Promise<T>): Promise<{ result: T; sent: string[] }> {
  counter.reset();
  const result = await run();
  return { result, sent: [...counter.statements] };
}

async function authorize(scope: string, pkce: { codeChallenge?: string; codeChallengeMethod?: string } = {}) {
  const { result: res, sent } = await counting(() => web.get(authorizeUrl(c.clientId, { scope, state: 's', ...pkce })));
  expect(res.statusCode).toBe(302);
  const code = new URL(res.headers.location as string).searchParams.get('code');
  expect(code).toMatch(/^[0-9a-f]{64}$/);
  return { code: code!, sent };
}

const exchange = (code: string, extra: Record<string, string> = {}) =>
  counting(() =>
    app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, ...extra }),
    }),
  );

const INVALID_GRANT = {
  error: 'invalid_grant',
  error_description:
    'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
};

/** The request's statements, all the grant's: the first also authenticates the client (the application and the throttle). */
function grantStatements(sent: string[]) {
  expect(sent[0]).toMatch(/ oauth_applications .* rate_limit_counters /);
  return sent;
}

const SPEND =
  /^with locked as \( select .* from oauth_authorization_codes where code_digest = \$1 for update \),(?: app as .* client_check as materialized \(.*\),)? code as \( select .* from locked as l left join users as u on u.id = l.user_id \), spent as \( update oauth_authorization_codes .* issued as \( insert into oauth_access_tokens /;

const codeRow = () => f.db.selectFrom('oauth_authorization_codes').select(['used_at']).executeTakeFirstOrThrow();
const tokenCount = async () =>
  (
    await f.db
      .selectFrom('oauth_access_tokens')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
  ).n;

describe('GET /oauth/authorize, signed in, trusted application', () => {
  it('2 statements: the application with the session and its user, then the code; no session write', async () => {
    const { sent } = await authorize('api');
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(
      /^select a.id as app_id, .* from \(select\) as one left join oauth_applications a on a.uid = \$1 left join web_sessions s on s.id_digest = \$2 and s.expires_at > \$3 left join users u on u.id = s.user_id$/,
    );
    expect(sent[1]).toMatch(/^insert into oauth_authorization_codes \(application_id, /);
  });
  it('signed out: the one read, then the sign-in redirect (a blocked user: the session row keeps return_to); an unknown client: the error page', async () => {
    const signedOut = await counting(() => app.inject({ url: authorizeUrl(c.clientId, { scope: 'api' }) }));
    expect(signedOut.result.statusCode).toBe(302);
    expect(signedOut.result.headers.location).toBe('/users/sign_in');
    expect(signedOut.sent).toHaveLength(1);
    expect(signedOut.sent[0]).toMatch(/^select a.id as app_id, /);

    await f.db.updateTable('users').set({ state: 'blocked' }).execute();
    const blocked = await counting(() => web.get(authorizeUrl(c.clientId, { scope: 'api' })));
    expect(blocked.result.statusCode).toBe(302);
    expect(blocked.result.headers.location).toBe('/users/sign_in');
    // The session row keeps where to return after signing in again.
    expect(blocked.sent).toHaveLength(2);
    expect(blocked.sent[1]).toMatch(/^update "web_sessions" set "data" = \$1 where "id_digest" = \$2$/);
    await f.db.updateTable('users').set({ state: 'active' }).execute();

    const unknown = await counting(() => web.get(authorizeUrl('0'.repeat(64), { scope: 'api' })));
    expect(unknown.result.statusCode).toBe(400);
    expect(unknown.result.body).toContain('Client authentication failed due to unknown client');
    expect(unknown.sent).toHaveLength(1);
  });
});

describe('POST /oauth/token, grant_type=authorization_code', () => {
  it('without openid: one statement for the grant, no transaction', async () => {
    const { code } = await authorize('api');
    const { result: res, sent } = await exchange(code);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ token_type: 'bearer', scope: 'api', expires_in: 7200 });
    expect(res.json()).not.toHaveProperty('id_token');
    const grant = grantStatements(sent);
    expect(grant).toHaveLength(1);
    expect(grant[0]).toMatch(SPEND);
    expect((await codeRow()).used_at).toBeInstanceOf(Date);
    expect(await tokenCount()).toBe(1);
  });

  it('a replay: the statement finds the code used, and the revocation is one more (committed) statement', async () => {
    const { code } = await authorize('api');
    const first = (await exchange(code)).result.json();
    const { result: res, sent } = await exchange(code);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(INVALID_GRANT);
    const grant = grantStatements(sent);
    expect(grant).toHaveLength(2);
    expect(grant[0]).toMatch(SPEND);
    expect(grant[1]).toMatch(
      /^update "oauth_access_tokens" set "revoked_at" = \$1 where \("authorization_code_id" = \$2 or "family_id" in \(select "first"."id" from "oauth_access_tokens" as "first" where "first"."authorization_code_id" = \$3\)\)/,
    );
    const info = await app.inject({
      url: '/oauth/token/info',
      headers: { authorization: `Bearer ${first.access_token}` },
    });
    expect({ status: info.statusCode, body: info.json() }).toEqual({
      status: 401,
      body: { error: 'invalid_token', error_description: 'The access token is invalid', state: 'unauthorized' },
    });
  });

  it('with openid: one statement spends the code and returns its user, the ID token is signed from it', async () => {
    const { code } = await authorize('openid api');
    const { result: res, sent } = await exchange(code);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ token_type: 'bearer', scope: 'openid api' });
    expect(res.json().id_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const grant = grantStatements(sent);
    expect(grant).toHaveLength(1);
    expect(grant[0]).toMatch(SPEND);
    expect((await codeRow()).used_at).toBeInstanceOf(Date);
    expect(await tokenCount()).toBe(1);
  });

  it('with openid, a failure after the spend revokes what the statement issued; a retry is a replay', async () => {
    const { code } = await authorize('openid api');
    // The key loads before the statement, and fails when the token is signed.
    loadsBeforeFailure = 1;
    const { result: failed, sent } = await exchange(code);
    expect(failed.statusCode).toBe(500);
    const grant = grantStatements(sent);
    expect(grant).toHaveLength(2);
    expect(grant[0]).toMatch(SPEND);
    expect(grant[1]).toMatch(
      /^update "oauth_access_tokens" set "revoked_at" = \$1 where \("authorization_code_id" = \$2 or "family_id" in \(select "first"."id" from "oauth_access_tokens" as "first" where "first"."authorization_code_id" = \$3\)\)/,
    );
    expect((await codeRow()).used_at).toBeInstanceOf(Date);
    const tokens = await f.db.selectFrom('oauth_access_tokens').select(['revoked_at']).execute();
    expect(tokens).toHaveLength(1);
    expect(tokens[0].revoked_at).toBeInstanceOf(Date);
    loadsBeforeFailure = Number.POSITIVE_INFINITY;
    const retried = (await exchange(code)).result;
    expect({ status: retried.statusCode, body: retried.json() }).toEqual({ status: 400, body: INVALID_GRANT });
  });

  it('with openid, a signing failure comes before the code is spent: it stays unused and redeemable', async () => {
    const { code } = await authorize('openid api');
    failSigning = true;
    const { result: failed, sent } = await exchange(code);
    expect(failed.statusCode).toBe(500);
    const grant = grantStatements(sent);
    expect(grant).toHaveLength(1);
    expect(grant[0]).toMatch(SPEND);
    expect((await codeRow()).used_at).toBeNull();
    expect(await tokenCount()).toBe(0);
    failSigning = false;
    const retried = (await exchange(code)).result;
    expect(retried.statusCode).toBe(200);
    expect(retried.json().id_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(await tokenCount()).toBe(1);
  });

  it('checks made by the statement refuse without spending: PKCE (S256, plain, wrong or short verifiers), a blocked user', async () => {
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    const s256 = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    const refused = async (code: string, extra: Record<string, string> = {}) => {
      const { result: res } = await exchange(code, extra);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(INVALID_GRANT);
      expect(await tokenCount()).toBe(0);
    };

    const { code } = await authorize('api', { codeChallenge: s256, codeChallengeMethod: 'S256' });
    await refused(code);
    await refused(code, { code_verifier: `${verifier.slice(0, -1)}Y` });
    await refused(code, { code_verifier: 'short' });
    await refused(code, { code_verifier: s256 });
    expect((await codeRow()).used_at).toBeNull();
    expect((await exchange(code, { code_verifier: verifier })).result.statusCode).toBe(200);

    await resetDatabase(f.db, ['service_keys']);
    await makeUser(f.db, 'alice');
    c = await makeApp(f.db, { name: 'Trusted', trusted: true, scopes: 'api openid' });
    web = new WebClient(app);
    await web.signIn('alice', PASSWORD);
    const plain = await authorize('api', { codeChallenge: verifier, codeChallengeMethod: 'plain' });
    await refused(plain.code, { code_verifier: s256 });
    await f.db.updateTable('users').set({ state: 'blocked' }).execute();
    await refused(plain.code, { code_verifier: verifier });
    expect((await codeRow()).used_at).toBeNull();
    await f.db.updateTable('users').set({ state: 'active' }).execute();
    const { result: ok, sent } = await exchange(plain.code, { code_verifier: verifier });
    expect(ok.statusCode).toBe(200);
    expect(grantStatements(sent)).toHaveLength(1);
  });

  const post = (code: string, authorization: string, remoteAddress = '127.0.0.1') =>
    app.inject({
      method: 'POST',
      url: '/oauth/token',
      remoteAddress,
      headers: { ...FORM, authorization },
      payload: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
    });
  const counters = () => f.db.selectFrom('rate_limit_counters').select(['key', 'count']).execute();

  it('a wrong secret with a live code: 401 in two statements, the code unspent, one failure counted', async () => {
    const { code } = await authorize('api');
    counter.reset();
    const res = await post(code, basic(c.clientId, 'wrong'), '203.0.113.20');
    // The quick check (a right secret from an address without failures only; it writes nothing),
    // then the statement again with the check that counts the failure.
    expect(counter.statements).toHaveLength(2);
    expect(counter.statements[0]).not.toMatch(/insert into rate_limit_counters/);
    expect(counter.statements[1]).toMatch(/insert into rate_limit_counters/);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    expect(res.json()).toEqual({
      error: 'invalid_client',
      error_description:
        'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
    });
    expect((await codeRow()).used_at).toBeNull();
    expect(await tokenCount()).toBe(0);
    expect(await counters()).toEqual([{ key: 'failures:addr:203.0.113.20', count: 1 }]);
    // The right secret from that address: the quick check does not decide (a failure in the
    // window), the counting check admits it and counts nothing.
    counter.reset();
    const ok = await post(code, basic(c.clientId, c.secret), '203.0.113.20');
    expect(ok.statusCode).toBe(200);
    expect(counter.statements).toHaveLength(2);
    expect(await counters()).toEqual([{ key: 'failures:addr:203.0.113.20', count: 1 }]);
  });

  it("another application's right secret with this application's code: invalid_grant, unspent, nothing counted", async () => {
    const { code } = await authorize('api openid');
    const other = await makeApp(f.db, { name: 'Other', scopes: 'api openid' });
    const res = await post(code, basic(other.clientId, other.secret));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(INVALID_GRANT);
    expect((await codeRow()).used_at).toBeNull();
    expect(await counters()).toEqual([]);
    expect((await exchange(code)).result.statusCode).toBe(200);
  });

  it('an application that requires DPoP: its code is not spent without a proof (the one statement declines)', async () => {
    await f.db.updateTable('oauth_applications').set({ dpop_bound_access_tokens: true }).execute();
    const { code } = await authorize('api');
    const res = await post(code, basic(c.clientId, c.secret));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_dpop_proof', error_description: 'DPoP proof required' });
    expect((await codeRow()).used_at).toBeNull();
    expect(await tokenCount()).toBe(0);
  });
});

describe('/oauth/device, signed in', () => {
  const SESSION_WITH_USER = /^select .* from "web_sessions" .*join "users"/;
  const deviceCode = async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/oauth/authorize_device',
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: form({ client_id: c.clientId, scope: 'api' }),
    });
    expect(res.statusCode).toBe(200);
    return (res.json() as { user_code: string }).user_code;
  };

  it('GET: 1 statement, the session with its user (no second look-up of the user)', async () => {
    const { result: res, sent } = await counting(() => web.get('/oauth/device'));
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('Enter the code displayed on your device');
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(SESSION_WITH_USER);
  });

  it('POST a code: 5 statements (the session with its user, the two guess reservations, the grant, the reservations given back), then 303', async () => {
    const userCode = await deviceCode();
    const page = await web.get('/oauth/device');
    const { result: res, sent } = await counting(() =>
      web.post('/oauth/device', { authenticity_token: WebClient.csrf(page.body), user_code: userCode }),
    );
    expect(res.statusCode).toBe(303);
    expect(sent).toHaveLength(5);
    expect(sent[0]).toMatch(SESSION_WITH_USER);
    expect(sent[1]).toMatch(/^with "admitted" as \( insert into rate_limit_counters /);
    expect(sent[2]).toMatch(/^with "admitted" as \( insert into rate_limit_counters /);
    expect(sent[3]).toMatch(/ from "oauth_device_grants" where "user_code_digest" = \$1 /);
    expect(sent[4]).toMatch(/^with mine as \( select \* from unnest\(/);
  });

  it('GET the consent step: the same five, then its application (6; no owner to look up)', async () => {
    const userCode = await deviceCode();
    const { result: res, sent } = await counting(() => web.get(`/oauth/device/confirm?user_code=${userCode}`));
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('is requesting access to your account.');
    expect(res.body).toContain('Registered by the administrator');
    expect(sent).toHaveLength(6);
    expect(sent[0]).toMatch(SESSION_WITH_USER);
    expect(sent[3]).toMatch(/ from "oauth_device_grants" where "user_code_digest" = \$1 /);
    expect(sent[5]).toMatch(/ from "oauth_applications" where "id" = \$1$/);
  });
});
