// DPoP (RFC 9449) through the real app on real PostgreSQL: tokens bound at the token endpoint (every
// grant), the binding enforced at /api/v4, userinfo and token info, introspection's cnf, and every
// bad proof of issue 27 refused with its exact status, error and WWW-Authenticate, writing nothing.
// Proofs are built by hand with jose (the client side); PUBLIC_URL differs from the address the
// requests arrive at, as behind API Gateway.
import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT, UnsecuredJWT } from 'jose';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../service/config';
import { issueAccessToken } from '../../service/domain/oauth-tokens';
import { buildTestApp } from '../support/app';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, useFixture } from './support/harness';

const PUBLIC = 'https://lanyard.example.com';
const f = useFixture({ config: { publicUrl: PUBLIC } });
const ALGS = 'ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 Ed25519 EdDSA';

interface Key {
  privateKey: Parameters<typeof exportJWK>[0];
  jwk: JWK;
  jkt: string;
}

async function newKey(alg = 'ES256'): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

const ath = (token: string) => createHash('sha256').update(token).digest('base64url');

interface ProofOptions {
  htm?: string;
  htu?: string;
  accessToken?: string;
  iat?: number;
  jti?: string;
  nonce?: string;
  typ?: string;
  jwk?: JWK;
  ath?: string;
}

/** A DPoP proof (RFC 9449 §4.2) signed with `key`; every member overridable to build a bad one. */
function proof(key: Key, o: ProofOptions = {}): Promise<string> {
  return new SignJWT({
    htm: o.htm ?? 'POST',
    htu: o.htu ?? `${PUBLIC}/oauth/token`,
    ...(o.accessToken ? { ath: ath(o.accessToken) } : {}),
    ...(o.ath ? { ath: o.ath } : {}),
    ...(o.nonce ? { nonce: o.nonce } : {}),
  })
    .setProtectedHeader({ alg: 'ES256', typ: o.typ ?? 'dpop+jwt', jwk: o.jwk ?? key.jwk })
    .setJti(o.jti ?? randomUUID())
    .setIssuedAt(o.iat ?? Math.floor(Date.now() / 1000))
    .sign(key.privateKey);
}

const tokenRequest = (body: Record<string, string | undefined>, headers: Record<string, string> = {}) =>
  f.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...headers }, payload: form(body) });

/** A token for `username` by the password grant, bound to `key` when given. */
async function passwordToken(username: string, key?: Key, extra: Record<string, string> = {}) {
  const res = await tokenRequest(
    { grant_type: 'password', username, password: PASSWORD },
    { ...(key ? { dpop: await proof(key) } : {}), ...extra },
  );
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { access_token: string; token_type: string; scope: string };
}

const countRows = async (table: string) =>
  Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(f.db)).rows[0].n);

/** Rows of the tables a token request or a resource request could write. */
const writes = async () => ({
  tokens: await countRows('oauth_access_tokens'),
  proofs: await countRows('dpop_proofs'),
});

const dpopGet = async (url: string, token: string, key: Key, o: ProofOptions = {}) =>
  f.app.inject({
    method: 'GET',
    url,
    headers: {
      authorization: `DPoP ${token}`,
      dpop: await proof(key, { htm: 'GET', htu: `${PUBLIC}${url}`, accessToken: token, ...o }),
    },
  });

describe('the token endpoint binds tokens to the proof key', () => {
  it('password grant: token_type DPoP, the thumbprint stored, introspection says cnf.jkt', async () => {
    await makeUser(f.db, 'alice');
    const key = await newKey();
    const tokens = await passwordToken('alice', key);
    expect(tokens.token_type).toBe('DPoP');
    const row = await f.db
      .selectFrom('oauth_access_tokens')
      .select('dpop_jkt')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(row.dpop_jkt).toBe(key.jkt);
    const { clientId, secret } = await makeApp(f.db, { name: 'RS' });
    const introspected = await f.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { ...FORM, authorization: basic(clientId, secret) },
      payload: form({ token: tokens.access_token }),
    });
    expect(introspected.json()).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: key.jkt } });
    // Without a proof: a bearer token, as before.
    const bearer = await passwordToken('alice');
    expect(bearer.token_type).toBe('bearer');
    const plain = await f.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { ...FORM, authorization: basic(clientId, secret) },
      payload: form({ token: bearer.access_token }),
    });
    expect(plain.json().token_type).toBe('Bearer');
    expect(plain.json().cnf).toBeUndefined();
  });

  it('client credentials: bound too', async () => {
    const { clientId, secret } = await makeApp(f.db, { name: 'Machine', scopes: 'api notify' });
    const key = await newKey();
    const res = await tokenRequest(
      { grant_type: 'client_credentials' },
      { authorization: basic(clientId, secret), dpop: await proof(key) },
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().token_type).toBe('DPoP');
  });

  it('a confidential client refreshes without a proof (its refresh token is not bound, §5); the new token is bearer', async () => {
    await makeUser(f.db, 'carol');
    const { application, clientId, secret } = await makeApp(f.db, { name: 'Web' });
    const key = await newKey();
    const issued = await tokenRequest(
      { grant_type: 'password', username: 'carol', password: PASSWORD },
      { authorization: basic(clientId, secret), dpop: await proof(key) },
    );
    expect(issued.json().token_type).toBe('DPoP');
    // The password grant has no refresh token: give the row one to rotate.
    const refreshToken = 'a'.repeat(64);
    await f.db
      .updateTable('oauth_access_tokens')
      .set({ refresh_token_digest: createHash('sha256').update(refreshToken).digest('hex') })
      .where('token_digest', '=', createHash('sha256').update(issued.json().access_token).digest('hex'))
      .where('application_id', '=', application.id)
      .execute();
    const refreshed = await tokenRequest(
      { grant_type: 'refresh_token', refresh_token: refreshToken },
      { authorization: basic(clientId, secret) },
    );
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json().token_type).toBe('bearer');
  });
});

describe('bad proofs at the token endpoint: 400 invalid_dpop_proof, nothing written', () => {
  const cases: Array<[string, (key: Key) => Promise<string>, string]> = [
    ['malformed', async () => 'not.a.jwt', 'malformed DPoP proof'],
    [
      'alg none',
      async (key) =>
        `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'dpop+jwt', jwk: key.jwk })).toString('base64url')}.${
          new UnsecuredJWT({ htm: 'POST', htu: `${PUBLIC}/oauth/token`, jti: 'x', iat: Math.floor(Date.now() / 1000) })
            .encode()
            .split('.')[1]
        }.`,
      'DPoP proof alg not allowed',
    ],
    [
      'HS256',
      async () =>
        new SignJWT({ htm: 'POST', htu: `${PUBLIC}/oauth/token` })
          // A symmetric "key" in the header: refused by its algorithm before anything else.
          .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct' } })
          .setJti('h')
          .setIssuedAt()
          .sign(new TextEncoder().encode('secretsecretsecretsecretsecret!!')),
      'DPoP proof alg not allowed',
    ],
    ['wrong typ', (key) => proof(key, { typ: 'JWT' }), 'DPoP proof typ must be dpop+jwt'],
    [
      'stale iat',
      (key) => proof(key, { iat: Math.floor(Date.now() / 1000) - 301 }),
      'DPoP proof iat is not recent enough',
    ],
    [
      'iat in the future',
      (key) => proof(key, { iat: Math.floor(Date.now() / 1000) + 400 }),
      'DPoP proof iat is not recent enough',
    ],
    ['wrong htm', (key) => proof(key, { htm: 'GET' }), 'DPoP proof htm mismatch'],
    [
      'wrong htu (the address the request arrived at, not PUBLIC_URL)',
      (key) => proof(key, { htu: 'http://localhost:80/oauth/token' }),
      'DPoP proof htu mismatch',
    ],
    ['htu of another endpoint', (key) => proof(key, { htu: `${PUBLIC}/oauth/revoke` }), 'DPoP proof htu mismatch'],
    [
      'a private key in jwk',
      async (key) => {
        const exported = await exportJWK(key.privateKey);
        return proof(key, { jwk: exported });
      },
      'DPoP proof jwk must be a public key',
    ],
    [
      'signed by another key than its jwk',
      async (key) => proof(await newKey(), { jwk: key.jwk }),
      'DPoP proof signature invalid',
    ],
  ];

  it.each(cases)('%s', async (_name, build, description) => {
    await makeUser(f.db, `u${randomUUID().slice(0, 8)}`).then(async ({ user }) => {
      const key = await newKey();
      const before = await writes();
      const res = await tokenRequest(
        { grant_type: 'password', username: user.username, password: PASSWORD },
        { dpop: await build(key) },
      );
      expect(res.statusCode).toBe(400);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.json()).toEqual({ error: 'invalid_dpop_proof', error_description: description });
      expect(await writes()).toEqual(before);
    });
  });

  it('two DPoP headers', async () => {
    await makeUser(f.db, 'dora');
    const key = await newKey();
    const res = await f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, dpop: [await proof(key), await proof(key)] },
      payload: form({ grant_type: 'password', username: 'dora', password: PASSWORD }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_dpop_proof', error_description: 'more than one DPoP proof' });
  });

  it('a replayed proof: the second use is refused; a refused grant gives its jti back', async () => {
    await makeUser(f.db, 'erin');
    const key = await newKey();
    const dpop = await proof(key);
    const wrong = await tokenRequest({ grant_type: 'password', username: 'erin', password: 'wrong' }, { dpop });
    expect(wrong.json().error).toBe('invalid_grant');
    // The refused request kept nothing: the same proof is still good once.
    const first = await tokenRequest({ grant_type: 'password', username: 'erin', password: PASSWORD }, { dpop });
    expect(first.statusCode).toBe(200);
    const before = await writes();
    const again = await tokenRequest({ grant_type: 'password', username: 'erin', password: PASSWORD }, { dpop });
    expect(again.statusCode).toBe(400);
    expect(again.json()).toEqual({ error: 'invalid_dpop_proof', error_description: 'DPoP proof replayed' });
    expect(await writes()).toEqual(before);
  });
});

describe('protected resources', () => {
  it('/api/v4, userinfo and token info accept the bound token with the DPoP scheme and a fresh proof each time', async () => {
    const { user } = await makeUser(f.db, 'frank');
    const key = await newKey();
    const { access_token: token } = await passwordToken('frank', key);
    const api = await dpopGet('/api/v4/user', token, key);
    expect(api.statusCode, api.body).toBe(200);
    expect(api.json().username).toBe('frank');
    const info = await dpopGet('/oauth/token/info', token, key);
    expect(info.statusCode, info.body).toBe(200);
    expect(info.json().resource_owner_id).toBe(user.id);
    // The query string is not part of htu.
    const withQuery = await f.app.inject({
      method: 'GET',
      url: '/api/v4/user?x=1',
      headers: {
        authorization: `DPoP ${token}`,
        dpop: await proof(key, { htm: 'GET', htu: `${PUBLIC}/api/v4/user#frag`, accessToken: token }),
      },
    });
    expect(withQuery.statusCode, withQuery.body).toBe(200);
  });

  it('userinfo with a bound openid token', async () => {
    await makeUser(f.db, 'gina');
    const { clientId, secret } = await makeApp(f.db, { name: 'OIDC', scopes: 'openid profile' });
    const key = await newKey();
    const res = await tokenRequest(
      { grant_type: 'password', username: 'gina', password: PASSWORD, scope: 'openid' },
      { authorization: basic(clientId, secret), dpop: await proof(key) },
    );
    expect(res.statusCode, res.body).toBe(200);
    const token = res.json().access_token;
    const info = await dpopGet('/oauth/userinfo', token, key);
    expect(info.statusCode, info.body).toBe(200);
    expect(info.json().sub).toBeDefined();
    const asBearer = await f.app.inject({ url: '/oauth/userinfo', headers: { authorization: `Bearer ${token}` } });
    expect(asBearer.statusCode).toBe(401);
    expect(asBearer.json().error).toBe('invalid_token');
  });

  it.each(['/api/v4/user', '/oauth/token/info'])(
    '%s: the bound token as a bearer token (header or query) → 401 invalid_token',
    async (url) => {
      await makeUser(f.db, `b${randomUUID().slice(0, 8)}`).then(async ({ user }) => {
        const key = await newKey();
        const { access_token: token } = await passwordToken(user.username, key);
        const description = 'DPoP-bound access token requires the DPoP scheme';
        for (const res of [
          await f.app.inject({ url, headers: { authorization: `Bearer ${token}` } }),
          await f.app.inject({ url: `${url}?access_token=${token}` }),
        ]) {
          expect(res.statusCode).toBe(401);
          expect(res.headers['www-authenticate']).toBe(
            `DPoP error="invalid_token", error_description="${description}", algs="${ALGS}"`,
          );
          expect(res.json()).toEqual({ error: 'invalid_token', error_description: description });
        }
      });
    },
  );

  it('an unbound token with the DPoP scheme → 401 invalid_token', async () => {
    await makeUser(f.db, 'hank');
    const { access_token: token } = await passwordToken('hank');
    const res = await dpopGet('/api/v4/user', token, await newKey());
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'invalid_token', error_description: 'access token is not DPoP-bound' });
  });

  describe('bad proofs at /api/v4: 401 invalid_dpop_proof with the DPoP challenge, no jti recorded', () => {
    const cases: Array<[string, (key: Key, token: string) => ProofOptions | Promise<ProofOptions>, string]> = [
      ['stale iat', () => ({ iat: Math.floor(Date.now() / 1000) - 600 }), 'DPoP proof iat is not recent enough'],
      ['wrong htm', () => ({ htm: 'POST' }), 'DPoP proof htm mismatch'],
      ['wrong htu', () => ({ htu: `${PUBLIC}/api/v4/users` }), 'DPoP proof htu mismatch'],
      ['wrong ath', () => ({ accessToken: 'b'.repeat(64) }), 'DPoP proof ath mismatch'],
      ['no ath', () => ({ accessToken: undefined, ath: undefined }), 'DPoP proof ath mismatch'],
      [
        'a private key in jwk',
        async (key) => ({ jwk: await exportJWK(key.privateKey) }),
        'DPoP proof jwk must be a public key',
      ],
      ['another key than the token’s', async () => ({ jwk: (await newKey()).jwk }), 'DPoP proof signature invalid'],
    ];
    it.each(cases)('%s', async (_name, options, description) => {
      const { user } = await makeUser(f.db, `r${randomUUID().slice(0, 8)}`);
      const key = await newKey();
      const { access_token: token } = await passwordToken(user.username, key);
      const before = await writes();
      const o = await options(key, token);
      const res = await f.app.inject({
        url: '/api/v4/user',
        headers: {
          authorization: `DPoP ${token}`,
          dpop: await proof(key, { htm: 'GET', htu: `${PUBLIC}/api/v4/user`, accessToken: token, ...o }),
        },
      });
      expect(res.statusCode).toBe(401);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.headers['www-authenticate']).toBe(
        `DPoP error="invalid_dpop_proof", error_description="${description}", algs="${ALGS}"`,
      );
      expect(res.json()).toEqual({ error: 'invalid_dpop_proof', error_description: description });
      expect(await writes()).toEqual(before);
    });

    it('a proof of another key (validly signed) → key mismatch', async () => {
      await makeUser(f.db, 'ivan');
      const key = await newKey();
      const { access_token: token } = await passwordToken('ivan', key);
      const res = await dpopGet('/api/v4/user', token, await newKey());
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({
        error: 'invalid_dpop_proof',
        error_description: 'DPoP proof key does not match the token',
      });
    });

    it('no proof with the DPoP scheme', async () => {
      await makeUser(f.db, 'jack');
      const key = await newKey();
      const { access_token: token } = await passwordToken('jack', key);
      const res = await f.app.inject({ url: '/api/v4/user', headers: { authorization: `DPoP ${token}` } });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'invalid_dpop_proof', error_description: 'DPoP proof required' });
    });

    it('a replayed proof', async () => {
      await makeUser(f.db, 'kate');
      const key = await newKey();
      const { access_token: token } = await passwordToken('kate', key);
      const dpop = await proof(key, { htm: 'GET', htu: `${PUBLIC}/api/v4/user`, accessToken: token });
      const headers = { authorization: `DPoP ${token}`, dpop };
      expect((await f.app.inject({ url: '/api/v4/user', headers })).statusCode).toBe(200);
      const again = await f.app.inject({ url: '/api/v4/user', headers });
      expect(again.statusCode).toBe(401);
      expect(again.headers['www-authenticate']).toBe(
        `DPoP error="invalid_dpop_proof", error_description="DPoP proof replayed", algs="${ALGS}"`,
      );
    });

    it('a refused request (insufficient scope) does not consume the proof', async () => {
      await makeUser(f.db, 'liam');
      const { clientId, secret } = await makeApp(f.db, { name: 'RO', scopes: 'read_user' });
      const key = await newKey();
      const issued = await tokenRequest(
        { grant_type: 'password', username: 'liam', password: PASSWORD },
        { authorization: basic(clientId, secret), dpop: await proof(key) },
      );
      const token = issued.json().access_token;
      const before = await writes();
      const res = await f.app.inject({
        url: '/api/v4/projects',
        headers: {
          authorization: `DPoP ${token}`,
          dpop: await proof(key, { htm: 'GET', htu: `${PUBLIC}/api/v4/projects`, accessToken: token }),
        },
      });
      expect(res.statusCode).toBe(403);
      expect(await writes()).toEqual(before);
    });
  });

  it('50 concurrent uses of one proof: exactly one accepted', async () => {
    await makeUser(f.db, 'mia');
    const key = await newKey();
    const { access_token: token } = await passwordToken('mia', key);
    const dpop = await proof(key, { htm: 'GET', htu: `${PUBLIC}/api/v4/user`, accessToken: token });
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        f.app.inject({ url: '/api/v4/user', headers: { authorization: `DPoP ${token}`, dpop } }),
      ),
    );
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(49);
  });

  it('50 concurrent token requests with one proof: exactly one token issued', async () => {
    await makeUser(f.db, 'nora');
    const key = await newKey();
    const dpop = await proof(key);
    const before = await countRows('oauth_access_tokens');
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        tokenRequest({ grant_type: 'password', username: 'nora', password: PASSWORD }, { dpop }),
      ),
    );
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(1);
    expect(results.filter((r) => r.json().error === 'invalid_dpop_proof')).toHaveLength(49);
    expect(await countRows('oauth_access_tokens')).toBe(before + 1);
  });
});

describe('server nonces (DPOP_REQUIRE_NONCE=true): stateless, accepted by every instance', () => {
  let strict: FastifyInstance;
  let other: FastifyInstance;
  beforeAll(async () => {
    // Two instances over one database and one key ring, like two Lambda instances.
    strict = await buildTestApp(f.db, { publicUrl: PUBLIC, dpopRequireNonce: true });
    other = await buildTestApp(f.db, { publicUrl: PUBLIC, dpopRequireNonce: true });
  });
  afterAll(() => Promise.all([strict.close(), other.close()]));

  it('token endpoint: use_dpop_nonce with a DPoP-Nonce, then the proof with it succeeds on another instance', async () => {
    await makeUser(f.db, 'olga');
    const key = await newKey();
    const body = form({ grant_type: 'password', username: 'olga', password: PASSWORD });
    const before = await writes();
    const first = await strict.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, dpop: await proof(key) },
      payload: body,
    });
    expect(first.statusCode).toBe(400);
    expect(first.json()).toEqual({ error: 'use_dpop_nonce', error_description: 'nonce is required in the DPoP proof' });
    const nonce = first.headers['dpop-nonce'] as string;
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await writes()).toEqual(before);
    const retry = await other.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, dpop: await proof(key, { nonce }) },
      payload: body,
    });
    expect(retry.statusCode, retry.body).toBe(200);
    expect(retry.json().token_type).toBe('DPoP');

    // At a resource: 401 with the DPoP challenge and a nonce; with it, accepted.
    const token = retry.json().access_token;
    const noNonce = await strict.inject({
      url: '/api/v4/user',
      headers: {
        authorization: `DPoP ${token}`,
        dpop: await proof(key, { htm: 'GET', htu: `${PUBLIC}/api/v4/user`, accessToken: token }),
      },
    });
    expect(noNonce.statusCode).toBe(401);
    expect(noNonce.headers['www-authenticate']).toBe(
      `DPoP error="use_dpop_nonce", error_description="nonce is required in the DPoP proof", algs="${ALGS}"`,
    );
    const resourceNonce = noNonce.headers['dpop-nonce'] as string;
    expect(resourceNonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const withNonce = await other.inject({
      url: '/api/v4/user',
      headers: {
        authorization: `DPoP ${token}`,
        dpop: await proof(key, { htm: 'GET', htu: `${PUBLIC}/api/v4/user`, accessToken: token, nonce: resourceNonce }),
      },
    });
    expect(withNonce.statusCode, withNonce.body).toBe(200);
  });

  it('a nonce that is not ours: use_dpop_nonce, even where nonces are optional', async () => {
    await makeUser(f.db, 'pete');
    const key = await newKey();
    for (const app of [strict, f.app]) {
      const res = await app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { ...FORM, dpop: await proof(key, { nonce: 'x'.repeat(43) }) },
        payload: form({ grant_type: 'password', username: 'pete', password: PASSWORD }),
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'use_dpop_nonce', error_description: 'invalid nonce in DPoP proof' });
      expect(res.headers['dpop-nonce']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
  });
});

describe('an application that requires DPoP (dpop_bound_access_tokens)', () => {
  it('refuses a token request without a proof, changing nothing', async () => {
    await makeUser(f.db, 'quinn');
    const { clientId, secret } = await makeApp(f.db, { name: 'Strict', dpopBoundAccessTokens: true });
    const before = await writes();
    const res = await tokenRequest(
      { grant_type: 'password', username: 'quinn', password: PASSWORD },
      { authorization: basic(clientId, secret) },
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_dpop_proof', error_description: 'DPoP proof required' });
    expect(await writes()).toEqual(before);
  });

  it('refuses a refresh without a proof too, changing nothing (the one-statement refresh declines it)', async () => {
    const { user } = await makeUser(f.db, 'quincy');
    const { application, clientId, secret } = await makeApp(f.db, { name: 'Strict too', dpopBoundAccessTokens: true });
    const { refreshToken } = await issueAccessToken(f.db, {
      applicationId: application.id,
      userId: user.id,
      scopes: ['api'],
      withRefreshToken: true,
    });
    const before = await writes();
    const res = await tokenRequest(
      { grant_type: 'refresh_token', refresh_token: refreshToken as string },
      { authorization: basic(clientId, secret) },
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_dpop_proof', error_description: 'DPoP proof required' });
    expect(await writes()).toEqual(before);
  });
});

describe('the device grant (RFC 8628) binds too; a public client refreshes only with the key', () => {
  it('device code → DPoP token; refresh with another key or none → invalid_grant; with the key → a bound pair', async () => {
    const { user } = await makeUser(f.db, 'rita');
    const { clientId } = await makeApp(f.db, { name: 'TV', confidential: false, scopes: 'read_user' });
    const started = await f.app.inject({
      method: 'POST',
      url: '/oauth/authorize_device',
      headers: FORM,
      payload: form({ client_id: clientId }),
    });
    expect(started.statusCode).toBe(200);
    // The person approved it on /oauth/device (test/oauth/device-flow.test.ts drives that page).
    await sql`update oauth_device_grants set status = 'approved', user_id = ${user.id}`.execute(f.db);
    const key = await newKey();
    const issued = await tokenRequest(
      {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        client_id: clientId,
        device_code: started.json().device_code,
      },
      { dpop: await proof(key) },
    );
    expect(issued.statusCode, issued.body).toBe(200);
    expect(issued.json().token_type).toBe('DPoP');
    const refresh = { grant_type: 'refresh_token', refresh_token: issued.json().refresh_token, client_id: clientId };
    const before = await writes();
    for (const headers of [{}, { dpop: await proof(await newKey()) }] as Record<string, string>[]) {
      const refused = await tokenRequest(refresh, headers);
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toBe('invalid_grant');
    }
    expect(await writes()).toEqual(before);
    const refreshed = await tokenRequest(refresh, { dpop: await proof(key) });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json().token_type).toBe('DPoP');
    const row = await f.db
      .selectFrom('oauth_access_tokens')
      .select('dpop_jkt')
      .where('token_digest', '=', createHash('sha256').update(refreshed.json().access_token).digest('hex'))
      .executeTakeFirstOrThrow();
    expect(row.dpop_jkt).toBe(key.jkt);
  });
});

describe('DPOP_REQUIRE_NONCE', () => {
  it('is off by default, true/false otherwise, and anything else is refused at start-up', () => {
    expect(loadConfig({}).dpopRequireNonce).toBe(false);
    expect(loadConfig({ DPOP_REQUIRE_NONCE: 'true' }).dpopRequireNonce).toBe(true);
    expect(loadConfig({ DPOP_REQUIRE_NONCE: '0' }).dpopRequireNonce).toBe(false);
    expect(() => loadConfig({ DPOP_REQUIRE_NONCE: 'sometimes' })).toThrow(
      'DPOP_REQUIRE_NONCE must be true or false (got "sometimes")',
    );
  });
});
