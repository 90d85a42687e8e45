// /api/v4 authentication (contract §4): the four token locations and their precedence, the exact
// 401/403 bodies, the scope matrix, blocked users, last_used_at, and unknown routes.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { Kysely, PostgresDialect } from 'kysely';
import type { Database, Db, User } from '../../service/db/schema';
import { findTokenRecord } from '../../service/domain/access-tokens';
import { createGroup, createProject, makeOAuthToken, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/db';

const UNAUTHORIZED = { message: '401 Unauthorized' };
const EXPIRED = {
  error: 'invalid_token',
  error_description: 'Token is expired. You can either do re-authorization or token refresh.',
};
const REVOKED = {
  error: 'invalid_token',
  error_description: 'Token was revoked. You have to re-authorize from the user.',
};
const insufficient = (scope: string) => ({
  error: 'insufficient_scope',
  error_description: 'The request requires higher privileges than provided by the access token.',
  scope,
});
const FORBIDDEN = { message: '403 Forbidden' };

let testDb: TestDatabase;
let db: Db;
let app: FastifyInstance;
let alice: User;
let bob: User;
/** The app's public URL (the test config's default): the metadata URL in 401 challenges names it. */
const publicUrl = 'http://127.0.0.1:3000';

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = testDb.db;
  app = await buildTestApp(db);
  alice = await makeUser(db, 'alice');
  bob = await makeUser(db, 'bob');
});

async function whoAmI(options: { url?: string; headers?: Record<string, string | undefined> }) {
  const res = await app.inject({ method: 'GET', url: options.url ?? '/api/v4/user', headers: options.headers });
  return { status: res.statusCode, body: res.json(), res };
}

describe('token locations', () => {
  it('accepts a personal access token in PRIVATE-TOKEN, ?private_token=, Authorization: Bearer and ?access_token=', async () => {
    const pat = await makePat(db, alice, ['api']);
    for (const req of [
      { headers: { 'private-token': pat } },
      { url: `/api/v4/user?private_token=${pat}` },
      { headers: { authorization: `Bearer ${pat}` } },
      { url: `/api/v4/user?access_token=${pat}` },
    ]) {
      const { status, body } = await whoAmI(req);
      expect(status).toBe(200);
      expect(body.username).toBe('alice');
    }
  });

  it('accepts an OAuth access token in Authorization: Bearer and ?access_token=, never as a private token', async () => {
    const token = await makeOAuthToken(db, alice, ['api']);
    expect((await whoAmI({ headers: { authorization: `Bearer ${token}` } })).body.username).toBe('alice');
    expect((await whoAmI({ headers: { authorization: `bearer ${token}` } })).body.username).toBe('alice');
    expect((await whoAmI({ url: `/api/v4/user?access_token=${token}` })).body.username).toBe('alice');
    for (const req of [{ headers: { 'private-token': token } }, { url: `/api/v4/user?private_token=${token}` }]) {
      const { status, body } = await whoAmI(req);
      expect(status).toBe(401);
      expect(body).toEqual(UNAUTHORIZED);
    }
  });

  it('takes the first match: ?private_token=, then PRIVATE-TOKEN, then ?access_token=, then Authorization', async () => {
    const a = await makePat(db, alice, ['api']);
    const b = await makePat(db, bob, ['api']);
    const aOAuth = await makeOAuthToken(db, alice, ['api']);
    const bOAuth = await makeOAuthToken(db, bob, ['api']);
    const u = (q: string) => `/api/v4/user?${q}`;
    const cases: Array<[{ url?: string; headers?: Record<string, string> }, string]> = [
      [{ url: u(`private_token=${a}`), headers: { 'private-token': b, authorization: `Bearer ${bOAuth}` } }, 'alice'],
      [{ url: u(`private_token=${a}&access_token=${bOAuth}`) }, 'alice'],
      [{ headers: { 'private-token': a, authorization: `Bearer ${bOAuth}` } }, 'alice'],
      [{ url: u(`access_token=${b}`), headers: { 'private-token': a } }, 'alice'],
      [{ url: u(`access_token=${aOAuth}`), headers: { authorization: `Bearer ${bOAuth}` } }, 'alice'],
      [{ headers: { authorization: `Bearer ${bOAuth}` } }, 'bob'],
    ];
    for (const [req, who] of cases) {
      const { status, body } = await whoAmI(req);
      expect(status).toBe(200);
      expect(body.username).toBe(who);
    }
  });

  it('does not fall back when the first token is bad, but skips empty ones', async () => {
    const good = await makePat(db, alice, ['api']);
    expect(
      await whoAmI({ url: '/api/v4/user?private_token=glpat-nope', headers: { 'private-token': good } }),
    ).toMatchObject({ status: 401, body: UNAUTHORIZED });
    expect(await whoAmI({ headers: { 'private-token': 'glpat-nope', authorization: `Bearer ${good}` } })).toMatchObject(
      { status: 401, body: UNAUTHORIZED },
    );
    expect((await whoAmI({ url: '/api/v4/user?private_token=', headers: { 'private-token': good } })).status).toBe(200);
    expect(
      (await whoAmI({ url: '/api/v4/user?access_token=', headers: { authorization: `Bearer ${good}` } })).status,
    ).toBe(200);
  });
});

describe('§4 errors', () => {
  it('401 {"message":"401 Unauthorized"} without a token, for an unknown one, a malformed header, a repeated parameter', async () => {
    const pat = await makePat(db, alice, ['api']);
    for (const req of [
      {},
      { headers: { 'private-token': 'glpat-unknown-unknown-unknown' } },
      { headers: { authorization: 'Bearer 0123456789abcdef' } },
      { headers: { authorization: `Basic ${Buffer.from('alice:x').toString('base64')}` } },
      { headers: { authorization: `Bearer ${'a'.repeat(5000)}` } },
      { url: `/api/v4/user?private_token=${pat}&private_token=${pat}` },
    ]) {
      const { status, body, res } = await whoAmI(req);
      expect(status).toBe(401);
      expect(body).toEqual(UNAUTHORIZED);
      expect(res.headers['content-type']).toBe('application/json');
      // RFC 9728 §5.1: where the API's metadata is, on every 401.
      expect(res.headers['www-authenticate']).toBe(
        `Bearer realm="Protected by OAuth 2.0", resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/api/v4"`,
      );
    }
  });

  it('401 invalid_token "Token is expired…" for an expired OAuth token or PAT', async () => {
    const oauth = await makeOAuthToken(db, alice, ['api'], { expiresAt: new Date(Date.now() - 1000) });
    const pat = await makePat(db, alice, ['api'], { expiresAt: '2020-01-01' });
    for (const headers of [{ authorization: `Bearer ${oauth}` }, { 'private-token': pat }]) {
      const { status, body, res } = await whoAmI({ headers });
      expect(status).toBe(401);
      expect(body).toEqual(EXPIRED);
      expect(res.headers['www-authenticate']).toBe(
        `Bearer realm="Protected by OAuth 2.0", error="invalid_token", error_description="Token is expired. You can either do re-authorization or token refresh.", resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/api/v4"`,
      );
    }
  });

  it('a PAT expiring today still works (valid through the end of its day, UTC)', async () => {
    const pat = await makePat(db, alice, ['api'], { expiresAt: new Date().toISOString().slice(0, 10) });
    expect((await whoAmI({ headers: { 'private-token': pat } })).status).toBe(200);
  });

  it('401 invalid_token "Token was revoked…" for a revoked OAuth token or PAT', async () => {
    const oauth = await makeOAuthToken(db, alice, ['api'], { revoked: true });
    const pat = await makePat(db, alice, ['api'], { revoked: true });
    for (const headers of [{ authorization: `Bearer ${oauth}` }, { 'private-token': pat }]) {
      expect(await whoAmI({ headers })).toMatchObject({ status: 401, body: REVOKED });
    }
  });

  it('checks expiry before revocation (GitLab order)', async () => {
    const oauth = await makeOAuthToken(db, alice, ['api'], { revoked: true, expiresAt: new Date(Date.now() - 1000) });
    expect(await whoAmI({ headers: { authorization: `Bearer ${oauth}` } })).toMatchObject({
      status: 401,
      body: EXPIRED,
    });
  });

  it('403 {"message":"403 Forbidden"} for a blocked user, with a valid token of any kind', async () => {
    const carol = await makeUser(db, 'carol', { blocked: true });
    const pat = await makePat(db, carol, ['api']);
    const oauth = await makeOAuthToken(db, carol, ['api']);
    for (const headers of [{ 'private-token': pat }, { authorization: `Bearer ${oauth}` }]) {
      expect(await whoAmI({ headers })).toMatchObject({ status: 403, body: FORBIDDEN });
    }
    const put = await app.inject({
      method: 'PUT',
      url: '/api/v4/notification_settings?level=watch',
      headers: { 'private-token': pat },
    });
    expect(put.statusCode).toBe(403);
    expect(put.json()).toEqual(FORBIDDEN);
  });

  it('404 {"error":"404 Not Found"} for unknown /api/v4 routes, with or without a token', async () => {
    const pat = await makePat(db, alice, ['api']);
    for (const headers of [{}, { 'private-token': pat }]) {
      const res = await app.inject({ method: 'GET', url: '/api/v4/nope', headers });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: '404 Not Found' });
    }
    const res = await app.inject({ method: 'DELETE', url: '/api/v4/user', headers: { 'private-token': pat } });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: '404 Not Found' });
  });
});

describe('scope matrix', () => {
  // [method, url, allowed scopes, the `scope` member of the 403]
  const group = { id: 0 };
  const project = { id: 0 };
  beforeAll(async () => {
    group.id = (await createGroup(db, { path: 'scoped', visibility: 'public' })).id;
    project.id = (await createProject(db, { path: 'scoped/proj', visibility: 'public' })).id;
  });
  const routes = () =>
    [
      ['GET', '/api/v4/user', ['api', 'read_api', 'read_user'], 'api read_api read_user'],
      ['HEAD', '/api/v4/user', ['api', 'read_api', 'read_user'], 'api read_api read_user'],
      ['GET', '/api/v4/notification_settings', ['api', 'read_api'], 'api read_api'],
      ['HEAD', '/api/v4/notification_settings', ['api', 'read_api'], 'api read_api'],
      ['PUT', '/api/v4/notification_settings?level=watch', ['api'], 'api'],
      ['GET', `/api/v4/groups/${group.id}/notification_settings`, ['api', 'read_api'], 'api read_api'],
      ['PUT', `/api/v4/groups/${group.id}/notification_settings?level=watch`, ['api'], 'api'],
      ['GET', `/api/v4/projects/${project.id}/notification_settings`, ['api', 'read_api'], 'api read_api'],
      ['PUT', `/api/v4/projects/${project.id}/notification_settings?level=watch`, ['api'], 'api'],
    ] as const;

  for (const scope of ['api', 'read_api', 'read_user'] as const) {
    for (const kind of ['pat', 'oauth'] as const) {
      it(`${scope} (${kind})`, async () => {
        const token = kind === 'pat' ? await makePat(db, alice, [scope]) : await makeOAuthToken(db, alice, [scope]);
        for (const [method, url, allowed, required] of routes()) {
          const res = await app.inject({ method, url, headers: { authorization: `Bearer ${token}` } });
          if ((allowed as readonly string[]).includes(scope)) {
            expect([method, url, res.statusCode]).toEqual([method, url, 200]);
          } else {
            expect([method, url, res.statusCode]).toEqual([method, url, 403]);
            if (method !== 'HEAD') expect(res.json()).toEqual(insufficient(required));
          }
        }
      });
    }
  }

  it('a token with several scopes is allowed when any of them is', async () => {
    const token = await makeOAuthToken(db, alice, ['read_user', 'read_api']);
    const res = await app.inject({
      method: 'GET',
      url: '/api/v4/notification_settings',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.statusCode).toBe(200);
  });

  it('scope is checked before the user state (GitLab order)', async () => {
    const dave = await makeUser(db, 'dave', { blocked: true });
    const token = await makePat(db, dave, ['read_user']);
    const res = await app.inject({
      method: 'PUT',
      url: '/api/v4/notification_settings',
      headers: { 'private-token': token },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual(insufficient('api'));
  });
});

describe('hot path', () => {
  it('resolves a token and its owner in one query, selecting no credential column', async () => {
    const pat = await makePat(db, alice, ['api']);
    const record = await findTokenRecord(db, 'personal_access_token', pat);
    expect(record?.user).toMatchObject({ id: alice.id, username: 'alice', two_factor_enabled: false });
    expect(record?.user).not.toHaveProperty('password_hash');
    expect(record?.user).not.toHaveProperty('otp_secret');
  });

  it('GET /user costs one database query (plus one write when last_used_at is refreshed)', async () => {
    const queries: string[] = [];
    const counted = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: testDb.pool }),
      log: (event) => void queries.push(event.query.sql),
    });
    const countedApp = await buildTestApp(counted);
    const pat = await makePat(db, alice, ['api']);
    const oauth = await makeOAuthToken(db, alice, ['api']);
    expect((await countedApp.inject({ url: '/api/v4/user', headers: { 'private-token': pat } })).statusCode).toBe(200);
    expect(queries).toHaveLength(2);
    expect(queries[1]).toMatch(/^update "personal_access_tokens" set "last_used_at"/);
    queries.length = 0;
    expect((await countedApp.inject({ url: '/api/v4/user', headers: { 'private-token': pat } })).statusCode).toBe(200);
    expect(
      (await countedApp.inject({ url: '/api/v4/user', headers: { authorization: `Bearer ${oauth}` } })).statusCode,
    ).toBe(200);
    expect(queries).toHaveLength(2);
    // The PAT joins its user; an OAuth token left-joins (an application's own token has none).
    expect(queries[0]).toMatch(/inner join "users" as "u" .* where "t"."token_digest" = \$1$/);
    expect(queries[1]).toMatch(/left join "users" as "u" .* where "t"."token_digest" = \$1$/);
  });

  it('updates last_used_at on first use, then at most once a minute', async () => {
    const pat = await makePat(db, alice, ['api']);
    const lastUsed = async () =>
      (
        await db
          .selectFrom('personal_access_tokens')
          .select('last_used_at')
          .where('user_id', '=', alice.id)
          .orderBy('id', 'desc')
          .executeTakeFirstOrThrow()
      ).last_used_at;
    expect(await lastUsed()).toBeNull();
    await whoAmI({ headers: { 'private-token': pat } });
    const first = await lastUsed();
    expect(first).toBeInstanceOf(Date);
    await whoAmI({ headers: { 'private-token': pat } });
    expect((await lastUsed())?.getTime()).toBe(first!.getTime());
    // Two minutes later (simulated by ageing the stored value) it is refreshed again.
    const aged = new Date(Date.now() - 120_000);
    await db
      .updateTable('personal_access_tokens')
      .set({ last_used_at: aged })
      .where('user_id', '=', alice.id)
      .execute();
    await whoAmI({ headers: { 'private-token': pat } });
    expect((await lastUsed())!.getTime()).toBeGreaterThan(aged.getTime() + 60_000);
  });
});
