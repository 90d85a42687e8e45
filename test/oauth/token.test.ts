// POST /oauth/token: every grant, client authentication, and every row of the contract's error table.
import { createHash, randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { resetDatabase } from '../support/db';
import { obtainCode, WebClient } from './support/browser-like';
import { errorBody, type ErrorCode } from './support/contract';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const f = useFixture();

const token = (values: Record<string, string | undefined>, headers: Record<string, string> = {}) =>
  f.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...headers }, payload: form(values) });

function expectError(res: Awaited<ReturnType<typeof token>>, status: number, error: ErrorCode) {
  expect({ status: res.statusCode, body: res.json() }).toEqual({ status, body: errorBody(error) });
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.headers['cache-control']).toBe('no-store');
}

function expectTokenResponse(res: Awaited<ReturnType<typeof token>>, scope: string, refresh: boolean) {
  expect(res.statusCode).toBe(200);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers.pragma).toBe('no-cache');
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  const body = res.json();
  expect(Object.keys(body)).toEqual([
    'access_token',
    'token_type',
    ...(refresh ? ['expires_in', 'refresh_token'] : ['expires_in']),
    'scope',
    'created_at',
  ]);
  expect(body).toEqual({
    access_token: expect.stringMatching(/^[0-9a-f]{64}$/),
    token_type: 'bearer',
    expires_in: 7200,
    ...(refresh ? { refresh_token: expect.stringMatching(/^[0-9a-f]{64}$/) } : {}),
    scope,
    created_at: expect.any(Number),
  });
  expect(Math.abs(body.created_at - Date.now() / 1000)).toBeLessThan(5);
  return body as { access_token: string; refresh_token?: string };
}

let ctx: Awaited<ReturnType<typeof setup>>;
async function setup() {
  await makeUser(f.db, 'alice');
  const confidential = await makeApp(f.db, { name: 'Confidential', scopes: 'api read_user' });
  const other = await makeApp(f.db, { name: 'Other' });
  const pub = await makeApp(f.db, { name: 'Public', confidential: false, scopes: 'read_user' });
  const web = new WebClient(f.app);
  expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
  return { confidential, other, pub, web };
}

beforeEach(async () => {
  await resetDatabase(f.db);
  ctx = await setup();
});

/** The public application's code for this challenge, exchanged with the verifier: read_user, refreshable. */
async function publicPkceToken(method: string, challenge: string, verifier: string) {
  const { pub, web } = ctx;
  const code = await obtainCode(web, pub.clientId, { codeChallenge: challenge, codeChallengeMethod: method });
  return expectTokenResponse(
    await token({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: pub.clientId,
      code_verifier: verifier,
    }),
    'read_user',
    true,
  );
}

describe('grant_type=authorization_code', () => {
  it('exchanges a code (Basic auth) for the contract body; omitted scope = all of the app scopes', async () => {
    const { confidential: c, web } = ctx;
    const code = await obtainCode(web, c.clientId, { state: 's1' });
    const body = expectTokenResponse(
      await token(
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
        { authorization: basic(c.clientId, c.secret) },
      ),
      'api read_user',
      true,
    );
    const info = await f.app.inject({
      url: '/oauth/token/info',
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(info.json().scope).toEqual(['api', 'read_user']);
  });

  it('accepts client credentials in the body, and JSON bodies', async () => {
    const { confidential: c, web } = ctx;
    const code = await obtainCode(web, c.clientId, { scope: 'read_user' });
    expectTokenResponse(
      await token({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        client_id: c.clientId,
        client_secret: c.secret,
      }),
      'read_user',
      true,
    );
    const code2 = await obtainCode(web, c.clientId);
    const res = await f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: {
        grant_type: 'authorization_code',
        code: code2,
        redirect_uri: REDIRECT_URI,
        client_id: c.clientId,
        client_secret: c.secret,
      },
    });
    expectTokenResponse(res, 'api read_user', true);
  });

  it('HTTP Basic wins over body credentials', async () => {
    const { confidential: c, web } = ctx;
    const code = await obtainCode(web, c.clientId);
    // Right Basic, wrong body secret: Basic decides → success.
    expectTokenResponse(
      await token(
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT_URI,
          client_id: c.clientId,
          client_secret: 'gloas-wrong',
        },
        { authorization: basic(c.clientId, c.secret) },
      ),
      'api read_user',
      true,
    );
    // Wrong Basic, right body: Basic decides → 401 with WWW-Authenticate.
    const code2 = await obtainCode(web, c.clientId);
    const res = await token(
      {
        grant_type: 'authorization_code',
        code: code2,
        redirect_uri: REDIRECT_URI,
        client_id: c.clientId,
        client_secret: c.secret,
      },
      { authorization: basic(c.clientId, 'gloas-wrong') },
    );
    expectError(res, 401, 'invalid_client');
    expect(res.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
  });

  it('decodes Basic credentials as RFC 6749 §2.3.1 form-encoding (+ is a space, %XX escapes)', async () => {
    const { confidential: c, web } = ctx;
    // The id and secret percent-encoded character by character still authenticate.
    const enc = (s: string) => [...s].map((ch) => `%${ch.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
    const code = await obtainCode(web, c.clientId);
    expectTokenResponse(
      await token(
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
        { authorization: `Basic ${Buffer.from(`${enc(c.clientId)}:${enc(c.secret)}`).toString('base64')}` },
      ),
      'api read_user',
      true,
    );
    // A malformed escape is invalid_client (with the Basic challenge), not a 500.
    const res = await token(
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
      { authorization: `Basic ${Buffer.from(`${c.clientId}:%zz`).toString('base64')}` },
    );
    expectError(res, 401, 'invalid_client');
    expect(res.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    expectError(await token({ grant_type: 'password' }, { authorization: 'Basic !!!' }), 401, 'invalid_client');
  });

  it('a NUL in Basic credentials (raw or %00) is invalid_client with the Basic challenge, not a 500, and changes nothing', async () => {
    const { confidential: c, web } = ctx;
    const code = await obtainCode(web, c.clientId);
    const rows = async () => ({
      tokens: (await f.db.selectFrom('oauth_access_tokens').select('id').execute()).length,
      codes: await f.db.selectFrom('oauth_authorization_codes').select(['id', 'used_at']).orderBy('id').execute(),
      counters: (await f.db.selectFrom('rate_limit_counters').select('key').execute()).length,
    });
    const before = await rows();
    // Before: PostgreSQL refused the NUL in the secret check's query, a 500 without Cache-Control.
    for (const credentials of [`${c.clientId}:a\u0000b`, `${c.clientId}:%00`, `a%00b:${c.secret}`, `a\u0000:x`]) {
      const res = await token(
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
        { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` },
      );
      expectError(res, 401, 'invalid_client');
      expect(res.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    }
    expect(await rows()).toEqual(before);
    // The code was not spent: the real credentials still exchange it.
    expectTokenResponse(
      await token(
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
        { authorization: basic(c.clientId, c.secret) },
      ),
      'api read_user',
      true,
    );
  });

  it('public applications authenticate with client_id alone and must use PKCE (S256 and plain)', async () => {
    const verifier = `${'v'.repeat(43)}-._~A1`;
    await publicPkceToken('S256', createHash('sha256').update(verifier).digest('base64url'), verifier);
    await publicPkceToken('plain', verifier, verifier);
  });

  it('accepts a verifier of any alphabet whose transform is the challenge (standard base64, as git-credential-oauth sends)', async () => {
    const verifier = randomBytes(32).toString('base64'); // `+`, `/` and a trailing `=`
    for (const [method, challenge] of [
      ['S256', createHash('sha256').update(verifier).digest('base64url')],
      ['plain', verifier],
    ]) {
      await publicPkceToken(method, challenge, verifier);
    }
  });

  it('refuses a wrong or missing code_verifier, and a verifier for a code issued without a challenge', async () => {
    const { pub, confidential: c, web } = ctx;
    const verifier = 'x'.repeat(64);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const code = await obtainCode(web, pub.clientId, { codeChallenge: challenge, codeChallengeMethod: 'S256' });
    expectError(
      await token({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        client_id: pub.clientId,
        code_verifier: 'y'.repeat(64),
      }),
      400,
      'invalid_grant',
    );
    const code2 = await obtainCode(web, pub.clientId, { codeChallenge: challenge, codeChallengeMethod: 'S256' });
    expectError(
      await token({
        grant_type: 'authorization_code',
        code: code2,
        redirect_uri: REDIRECT_URI,
        client_id: pub.clientId,
      }),
      400,
      'invalid_grant',
    );
    expectError(
      await token({
        grant_type: 'authorization_code',
        code: code2,
        redirect_uri: REDIRECT_URI,
        client_id: pub.clientId,
        code_verifier: '',
      }),
      400,
      'invalid_grant',
    );
    // Neither refusal spent the code: the right verifier still works.
    expect(
      (
        await token({
          grant_type: 'authorization_code',
          code: code2,
          redirect_uri: REDIRECT_URI,
          client_id: pub.clientId,
          code_verifier: verifier,
        })
      ).statusCode,
    ).toBe(200);
    // RFC 9700 §2.1.1: PKCE downgrade.
    const code3 = await obtainCode(web, c.clientId);
    expectError(
      await token(
        { grant_type: 'authorization_code', code: code3, redirect_uri: REDIRECT_URI, code_verifier: verifier },
        { authorization: basic(c.clientId, c.secret) },
      ),
      400,
      'invalid_grant',
    );
  });

  it("invalid_grant: unknown code, another client's code, other redirect_uri, expired code", async () => {
    const { confidential: c, other, web } = ctx;
    const auth = { authorization: basic(c.clientId, c.secret) };
    expectError(
      await token({ grant_type: 'authorization_code', code: 'f'.repeat(64), redirect_uri: REDIRECT_URI }, auth),
      400,
      'invalid_grant',
    );
    const code = await obtainCode(web, c.clientId);
    expectError(
      await token(
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
        { authorization: basic(other.clientId, other.secret) },
      ),
      400,
      'invalid_grant',
    );
    const code2 = await obtainCode(web, c.clientId);
    expectError(
      await token(
        { grant_type: 'authorization_code', code: code2, redirect_uri: 'https://client.example/other' },
        auth,
      ),
      400,
      'invalid_grant',
    );
    const code3 = await obtainCode(web, c.clientId);
    await f.db
      .updateTable('oauth_authorization_codes')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .execute();
    expectError(
      await token({ grant_type: 'authorization_code', code: code3, redirect_uri: REDIRECT_URI }, auth),
      400,
      'invalid_grant',
    );
  });

  it('invalid_client: unknown client, wrong secret, no authentication, a confidential client without its secret', async () => {
    const { confidential: c, web } = ctx;
    const code = await obtainCode(web, c.clientId);
    const p = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI };
    for (const extra of [
      { client_id: 'f'.repeat(64), client_secret: c.secret },
      { client_id: c.clientId, client_secret: 'gloas-nope' },
      {},
      { client_id: c.clientId },
    ]) {
      const res = await token({ ...p, ...extra });
      expectError(res, 401, 'invalid_client');
      expect(res.headers['www-authenticate']).toBeUndefined();
    }
  });

  it('invalid_request: missing code or redirect_uri, missing or repeated grant_type, repeated parameters', async () => {
    const { confidential: c } = ctx;
    const auth = { authorization: basic(c.clientId, c.secret) };
    expectError(
      await token({ grant_type: 'authorization_code', redirect_uri: REDIRECT_URI }, auth),
      400,
      'invalid_request',
    );
    expectError(await token({ grant_type: 'authorization_code', code: 'a'.repeat(64) }, auth), 400, 'invalid_request');
    expectError(await token({ code: 'a'.repeat(64) }, auth), 400, 'invalid_request');
    const repeated = await f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, ...auth },
      payload: 'grant_type=password&grant_type=password',
    });
    expectError(repeated, 400, 'invalid_request');
    const repeatedCode = await f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, ...auth },
      payload: `grant_type=authorization_code&code=a&code=b&redirect_uri=${encodeURIComponent(REDIRECT_URI)}`,
    });
    expectError(repeatedCode, 400, 'invalid_request');
    const badJson = await f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/json' },
      payload: '{nope',
    });
    expectError(badJson, 400, 'invalid_request');
  });

  it('unsupported_grant_type: implicit and unknown grant types', async () => {
    const { confidential: c } = ctx;
    // (device_code is supported since contract §2's device flow: test/oauth/device-flow.test.ts;
    // client_credentials since §7: test/oauth/client-credentials.test.ts.)
    for (const g of ['implicit', 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'nope']) {
      expectError(
        await token({ grant_type: g }, { authorization: basic(c.clientId, c.secret) }),
        400,
        'unsupported_grant_type',
      );
    }
  });
});

describe('grant_type=password', () => {
  it('issues a token without refresh_token; client credentials optional, validated when sent', async () => {
    const { confidential: c } = ctx;
    expectTokenResponse(
      await token({ grant_type: 'password', username: 'alice', password: PASSWORD }),
      'api read_api read_user',
      false,
    );
    expectTokenResponse(
      await token(
        { grant_type: 'password', username: 'alice@example.com', password: PASSWORD },
        { authorization: basic(c.clientId, c.secret) },
      ),
      'api read_user',
      false,
    );
    expectTokenResponse(
      await token(
        { grant_type: 'password', username: 'ALICE', password: PASSWORD, scope: 'read_user' },
        { authorization: basic(c.clientId, c.secret) },
      ),
      'read_user',
      false,
    );
    const res = await token(
      { grant_type: 'password', username: 'alice', password: PASSWORD },
      { authorization: basic(c.clientId, 'gloas-bad') },
    );
    expectError(res, 401, 'invalid_client');
    expect(res.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
  });

  it('the same generic invalid_grant for a wrong password, an unknown user, a 2FA user and a blocked user', async () => {
    await makeUser(f.db, 'twofa', { twoFactor: true });
    await makeUser(f.db, 'blocked', { blocked: true });
    const bodies = [];
    for (const [username, password] of [
      ['alice', 'wrong password'],
      ['nobody', PASSWORD],
      ['twofa', PASSWORD],
      ['blocked', PASSWORD],
    ]) {
      const res = await token({ grant_type: 'password', username, password });
      expectError(res, 400, 'invalid_grant');
      bodies.push(res.body);
    }
    expect(new Set(bodies).size).toBe(1);
  });

  it('invalid_scope: unknown scope, or wider than the application', async () => {
    const { confidential: c } = ctx;
    expectError(
      await token({ grant_type: 'password', username: 'alice', password: PASSWORD, scope: 'sudo' }),
      400,
      'invalid_scope',
    );
    expectError(
      await token(
        { grant_type: 'password', username: 'alice', password: PASSWORD, scope: 'read_api' },
        { authorization: basic(c.clientId, c.secret) },
      ),
      400,
      'invalid_scope',
    );
  });

  it('unauthorized_client: a public client naming itself by client_id alone (a client_id is no credential)', async () => {
    const { pub } = ctx;
    expectError(
      await token({ grant_type: 'password', username: 'alice', password: PASSWORD, client_id: pub.clientId }),
      400,
      'unauthorized_client',
    );
    expectError(
      await token(
        { grant_type: 'password', username: 'alice', password: PASSWORD },
        { authorization: `Basic ${Buffer.from(`${pub.clientId}:`).toString('base64')}` },
      ),
      400,
      'unauthorized_client',
    );
    // Its real secret (public apps have one too) is a credential: accepted.
    expectTokenResponse(
      await token(
        { grant_type: 'password', username: 'alice', password: PASSWORD },
        { authorization: basic(pub.clientId, pub.secret) },
      ),
      'read_user',
      false,
    );
  });

  it('invalid_request: missing username or password', async () => {
    expectError(await token({ grant_type: 'password', username: 'alice' }), 400, 'invalid_request');
    expectError(await token({ grant_type: 'password', password: PASSWORD }), 400, 'invalid_request');
  });
});

describe('grant_type=refresh_token', () => {
  async function tokens() {
    const { confidential: c, web } = ctx;
    const code = await obtainCode(web, c.clientId);
    return expectTokenResponse(
      await token(
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
        { authorization: basic(c.clientId, c.secret) },
      ),
      'api read_user',
      true,
    );
  }

  it('rotates: new pair; the old refresh token dies; the old access token stays valid', async () => {
    const { confidential: c } = ctx;
    const first = await tokens();
    const second = expectTokenResponse(
      await token(
        { grant_type: 'refresh_token', refresh_token: first.refresh_token },
        { authorization: basic(c.clientId, c.secret) },
      ),
      'api read_user',
      true,
    );
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    const info = (t: string) => f.app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${t}` } });
    expect((await info(first.access_token)).statusCode).toBe(200);
    expect((await info(second.access_token)).statusCode).toBe(200);
    // Narrower scope on refresh.
    const third = expectTokenResponse(
      await token(
        { grant_type: 'refresh_token', refresh_token: second.refresh_token, scope: 'read_user' },
        { authorization: basic(c.clientId, c.secret) },
      ),
      'read_user',
      true,
    );
    // Cannot widen back beyond the refreshed token.
    expectError(
      await token(
        { grant_type: 'refresh_token', refresh_token: third.refresh_token, scope: 'api' },
        { authorization: basic(c.clientId, c.secret) },
      ),
      400,
      'invalid_scope',
    );
  });

  it("a confidential application's refresh token needs its credentials; another client gets invalid_grant", async () => {
    const { confidential: c, other } = ctx;
    const first = await tokens();
    expectError(
      await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token }),
      401,
      'invalid_client',
    );
    expectError(
      await token(
        { grant_type: 'refresh_token', refresh_token: first.refresh_token },
        { authorization: basic(other.clientId, other.secret) },
      ),
      400,
      'invalid_grant',
    );
    expectError(
      await token({ grant_type: 'refresh_token' }, { authorization: basic(c.clientId, c.secret) }),
      400,
      'invalid_request',
    );
    expectError(
      await token(
        { grant_type: 'refresh_token', refresh_token: 'f'.repeat(64) },
        { authorization: basic(c.clientId, c.secret) },
      ),
      400,
      'invalid_grant',
    );
    // Still usable by its own client.
    expectTokenResponse(
      await token(
        { grant_type: 'refresh_token', refresh_token: first.refresh_token },
        { authorization: basic(c.clientId, c.secret) },
      ),
      'api read_user',
      true,
    );
  });

  it('a public application refreshes with client_id only or nothing', async () => {
    const { pub } = ctx;
    const verifier = 'z'.repeat(50);
    const first = await publicPkceToken('plain', verifier, verifier);
    const second = expectTokenResponse(
      await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: pub.clientId }),
      'read_user',
      true,
    );
    expectTokenResponse(
      await token({ grant_type: 'refresh_token', refresh_token: second.refresh_token }),
      'read_user',
      true,
    );
  });

  it("a blocked user's tokens cannot be refreshed", async () => {
    const { confidential: c } = ctx;
    const first = await tokens();
    await f.db.updateTable('users').set({ state: 'blocked' }).execute();
    expectError(
      await token(
        { grant_type: 'refresh_token', refresh_token: first.refresh_token },
        { authorization: basic(c.clientId, c.secret) },
      ),
      400,
      'invalid_grant',
    );
  });
});
