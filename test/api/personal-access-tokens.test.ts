// The personal access tokens API (GitLab's /personal_access_tokens and POST /users/:id/personal_access_tokens):
// exact statuses and bodies through the real app, GitLab's errors, the rotation chain rule (a token
// revoked by rotation, presented again, revokes every token rotated from it), and the audit trail.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, User } from '../../service/db/schema';
import { sha256Hex } from '../../service/domain/secrets';
import { makeOAuthToken, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let root: User;
let alice: User;
let bob: User;
let rootToken: string;

const TODAY = () => new Date().toISOString().slice(0, 10);
const inDays = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
  root = await makeUser(db, 'root', { admin: true });
  alice = await makeUser(db, 'alice');
  bob = await makeUser(db, 'bob');
  rootToken = await makePat(db, root, ['api']);
});

const call = (method: 'GET' | 'POST' | 'DELETE', url: string, token: string, payload?: Record<string, unknown>) =>
  app.inject({ method, url: `/api/v4${url}`, headers: { 'private-token': token }, ...(payload ? { payload } : {}) });

/** A token's row as stored, by its value (the test's own view of the expected body). */
async function rowOf(token: string) {
  return db
    .selectFrom('personal_access_tokens')
    .select(['id', 'user_id', 'name', 'scopes', 'expires_at', 'revoked_at', 'last_used_at', 'created_at'])
    .where('token_digest', '=', sha256Hex(token))
    .executeTakeFirstOrThrow();
}

async function expectedBody(token: string, extra: Record<string, unknown> = { last_used_ips: [] }) {
  const r = await rowOf(token);
  return {
    id: r.id,
    name: r.name,
    revoked: r.revoked_at !== null,
    created_at: r.created_at.toISOString(),
    description: null,
    scopes: r.scopes,
    user_id: r.user_id,
    last_used_at: r.last_used_at?.toISOString() ?? null,
    active: r.revoked_at === null && (r.expires_at === null || r.expires_at >= TODAY()),
    expires_at: r.expires_at,
    ...extra,
  };
}

const auditRows = (action: string) =>
  db
    .selectFrom('audit_events')
    .select(['actor', 'target_type', 'target_id', 'details', 'ip_address'])
    .where('action', '=', action)
    .orderBy('id')
    .execute();

describe('GET /personal_access_tokens', () => {
  it("a user sees their own tokens only, in GitLab's shape, with the pagination headers", async () => {
    const a1 = await makePat(db, alice, ['api']);
    const a2 = await makePat(db, alice, ['read_api'], { expiresAt: inDays(30) });
    await makePat(db, bob, ['api']);
    const res = await call('GET', '/personal_access_tokens', a1);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.json()).toEqual([await expectedBody(a1), await expectedBody(a2)]);
    expect([
      res.headers['x-total'],
      res.headers['x-page'],
      res.headers['x-per-page'],
      res.headers['x-total-pages'],
    ]).toEqual(['2', '1', '20', '1']);
    // Naming themselves is fine; naming someone else is GitLab's 401.
    expect((await call('GET', `/personal_access_tokens?user_id=${alice.id}`, a1)).json()).toHaveLength(2);
    const other = await call('GET', `/personal_access_tokens?user_id=${bob.id}`, a1);
    expect([other.statusCode, other.json()]).toEqual([401, { message: '401 Unauthorized' }]);
  });

  it("administrators see everyone's, filter by user_id, and get 404 for a user that does not exist", async () => {
    const all = await call('GET', '/personal_access_tokens?per_page=100', rootToken);
    const ids = (await db.selectFrom('personal_access_tokens').select('id').orderBy('id').execute()).map((r) => r.id);
    expect(all.json().map((t: { id: number }) => t.id)).toEqual(ids);
    const bobs = await call('GET', `/personal_access_tokens?user_id=${bob.id}`, rootToken);
    expect(bobs.json().map((t: { user_id: number }) => t.user_id)).toEqual([bob.id]);
    const missing = await call('GET', '/personal_access_tokens?user_id=999999', rootToken);
    expect([missing.statusCode, missing.json()]).toEqual([404, { message: '404 Not Found' }]);
    const bad = await call('GET', '/personal_access_tokens?user_id=abc', rootToken);
    expect([bad.statusCode, bad.json()]).toEqual([400, { error: 'user_id is invalid' }]);
  });

  it("GitLab's filters: revoked, state, search, created_*, last_used_*, and its 400s", async () => {
    const carol = await makeUser(db, 'carol');
    const live = await makePat(db, carol, ['api']);
    const revoked = await makePat(db, carol, ['api'], { revoked: true });
    const expired = await makePat(db, carol, ['api'], { expiresAt: '2020-01-01' });
    await db
      .updateTable('personal_access_tokens')
      .set({ name: 'deploy bot' })
      .where('token_digest', '=', sha256Hex(live))
      .execute();
    const ids = async (query: string) =>
      (await call('GET', `/personal_access_tokens?${query}`, live)).json().map((t: { id: number }) => t.id);
    const [l, r, e] = [(await rowOf(live)).id, (await rowOf(revoked)).id, (await rowOf(expired)).id];
    expect(await ids('revoked=true')).toEqual([r]);
    expect(await ids('revoked=false')).toEqual([l, e]);
    expect(await ids('state=active')).toEqual([l]);
    expect(await ids('state=inactive')).toEqual([r, e]);
    expect(await ids('search=BOT')).toEqual([l]);
    expect(await ids('created_after=2000-01-01T00:00:00Z')).toEqual([l, r, e]);
    expect(await ids('created_before=2000-01-01')).toEqual([]);
    // The request above used `live`: it has been used since a minute ago, the others never.
    expect(await ids(`last_used_after=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}`)).toEqual([
      l,
    ]);
    // name_desc: the two named "test" (ties by id, the same direction), then "deploy bot".
    expect(await ids('sort=name_desc')).toEqual([e, r, l]);
    for (const [query, error] of [
      ['state=gone', 'state does not have a valid value'],
      ['created_after=yesterday', 'created_after is invalid'],
      ['last_used_before=2026-13-01', 'last_used_before is invalid'],
      ['revoked=maybe', 'revoked is invalid'],
      ['expires_before=2026-02-30', 'expires_before is invalid'],
    ]) {
      const res = await call('GET', `/personal_access_tokens?${query}`, live);
      expect([query, res.statusCode, res.json()]).toEqual([query, 400, { error }]);
    }
  });
});

describe('GET /personal_access_tokens/:id and /self', () => {
  it('the owner and administrators see a token; others get 401; administrators 404 for none', async () => {
    const token = await makePat(db, alice, ['api']);
    const { id } = await rowOf(token);
    const own = await call('GET', `/personal_access_tokens/${id}`, token);
    expect([own.statusCode, own.json()]).toEqual([200, await expectedBody(token)]);
    expect((await call('GET', `/personal_access_tokens/${id}`, rootToken)).json()).toEqual(await expectedBody(token));
    const bobToken = await makePat(db, bob, ['api']);
    for (const url of [
      `/personal_access_tokens/${id}`,
      '/personal_access_tokens/999999',
      '/personal_access_tokens/abc',
    ]) {
      const res = await call('GET', url, bobToken);
      expect([url, res.statusCode, res.json()]).toEqual([url, 401, { message: '401 Unauthorized' }]);
    }
    const none = await call('GET', '/personal_access_tokens/999999', rootToken);
    expect([none.statusCode, none.json()]).toEqual([404, { message: '404 Not Found' }]);
  });

  it('self: any scope may see itself; an OAuth token gets 400', async () => {
    const token = await makePat(db, alice, ['read_user']);
    const res = await call('GET', '/personal_access_tokens/self', token);
    // The request itself records last_used_at first: read the row after it.
    expect([res.statusCode, res.json()]).toEqual([200, await expectedBody(token, {})]);
    const oauth = await makeOAuthToken(db, alice, ['api']);
    const o = await app.inject({
      url: '/api/v4/personal_access_tokens/self',
      headers: { authorization: `Bearer ${oauth}` },
    });
    expect([o.statusCode, o.json()]).toEqual([
      400,
      { message: '400 Bad request - This endpoint requires token type to be a personal access token' },
    ]);
    // A read_user token may not list (GitLab's insufficient_scope).
    expect((await call('GET', '/personal_access_tokens', token)).statusCode).toBe(403);
  });
});

describe('DELETE /personal_access_tokens/:id and /self', () => {
  it('revokes own tokens (204), audited; someone else’s is 400, a missing one 404', async () => {
    const token = await makePat(db, alice, ['api']);
    const victim = await makePat(db, alice, ['api']);
    const { id } = await rowOf(victim);
    const bobToken = await makePat(db, bob, ['api']);
    const foreign = await call('DELETE', `/personal_access_tokens/${id}`, bobToken);
    expect([foreign.statusCode, foreign.json()]).toEqual([400, { message: '400 Bad request' }]);
    const missing = await call('DELETE', '/personal_access_tokens/999999', token);
    expect([missing.statusCode, missing.json()]).toEqual([404, { message: '404 Not found' }]);
    expect((await rowOf(victim)).revoked_at).toBeNull();

    const res = await call('DELETE', `/personal_access_tokens/${id}`, token);
    expect([res.statusCode, res.body]).toEqual([204, '']);
    const used = await call('GET', '/user', victim);
    expect([used.statusCode, used.json().error_description]).toEqual([
      401,
      'Token was revoked. You have to re-authorize from the user.',
    ]);
    expect((await auditRows('personal_access_token.revoke')).at(-1)).toEqual({
      actor: 'user:alice',
      target_type: 'personal_access_token',
      target_id: String(id),
      details: {},
      ip_address: '127.0.0.1',
    });
    // Administrators may revoke anyone's.
    expect((await call('DELETE', `/personal_access_tokens/${(await rowOf(bobToken)).id}`, rootToken)).statusCode).toBe(
      204,
    );
  });

  it('an empty body labelled application/json is no body (python-gitlab sends its DELETEs so); bad JSON is 400', async () => {
    const token = await makePat(db, alice, ['api']);
    const json = { 'private-token': token, 'content-type': 'application/json' };
    const bad = await app.inject({
      method: 'DELETE',
      url: '/api/v4/personal_access_tokens/self',
      headers: json,
      payload: '{',
    });
    expect(bad.statusCode).toBe(400);
    expect((await rowOf(token)).revoked_at).toBeNull();
    const res = await app.inject({
      method: 'DELETE',
      url: '/api/v4/personal_access_tokens/self',
      headers: json,
      payload: '',
    });
    expect([res.statusCode, res.body]).toEqual([204, '']);
  });

  it('self: any token revokes itself', async () => {
    const token = await makePat(db, alice, ['read_api']);
    expect((await call('DELETE', '/personal_access_tokens/self', token)).statusCode).toBe(204);
    expect((await call('GET', '/personal_access_tokens/self', token)).statusCode).toBe(401);
  });
});

describe('POST /personal_access_tokens/:id/rotate and /self/rotate', () => {
  it('revokes the old token and returns the new one once, a week by default, with the same name and scopes', async () => {
    const old = await makePat(db, alice, ['api', 'read_user']);
    const oldRow = await rowOf(old);
    const res = await call('POST', `/personal_access_tokens/${oldRow.id}/rotate`, old);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.token).toMatch(/^glpat-[A-Za-z0-9_-]{20,}$/);
    expect(body).toEqual({ ...(await expectedBody(body.token, { token: body.token })), expires_at: inDays(7) });
    expect([body.name, body.scopes, body.user_id, body.id > oldRow.id]).toEqual([
      'test',
      ['api', 'read_user'],
      alice.id,
      true,
    ]);
    expect((await call('GET', '/user', body.token)).json().username).toBe('alice');
    expect((await rowOf(old)).revoked_at).not.toBeNull();
    // Stored as a digest only.
    const stored = await db
      .selectFrom('personal_access_tokens')
      .select('token_digest')
      .where('id', '=', body.id)
      .executeTakeFirstOrThrow();
    expect(stored.token_digest).toBe(sha256Hex(body.token));
    expect((await auditRows('personal_access_token.rotate')).at(-1)).toEqual({
      actor: 'user:alice',
      target_type: 'personal_access_token',
      target_id: String(body.id),
      details: { user: 'alice', name: 'test', previous_id: oldRow.id },
      ip_address: '127.0.0.1',
    });
  });

  it('expires_at: a date; a bad or past one is 400 and changes nothing', async () => {
    const token = await makePat(db, alice, ['api']);
    const { id } = await rowOf(token);
    const bad = await call('POST', `/personal_access_tokens/${id}/rotate`, token, { expires_at: 'soon' });
    expect([bad.statusCode, bad.json()]).toEqual([400, { error: 'expires_at is invalid' }]);
    const past = await call('POST', `/personal_access_tokens/${id}/rotate`, token, { expires_at: '2020-01-01' });
    expect([past.statusCode, past.json()]).toEqual([400, { message: { expires_at: ['must not be in the past'] } }]);
    expect((await rowOf(token)).revoked_at).toBeNull();
    const res = await call('POST', `/personal_access_tokens/self/rotate?expires_at=${inDays(90)}`, token);
    expect([res.statusCode, res.json().expires_at]).toEqual([200, inDays(90)]);
  });

  it("a revoked or expired token cannot be rotated (GitLab's 400); others' are 401, missing 404 for admins", async () => {
    const revoked = await makePat(db, alice, ['api'], { revoked: true });
    const expired = await makePat(db, alice, ['api'], { expiresAt: '2020-01-01' });
    for (const [token, message] of [
      [revoked, '400 Bad request - Token already revoked'],
      [expired, '400 Bad request - Token already expired'],
    ]) {
      const res = await call('POST', `/personal_access_tokens/${(await rowOf(token)).id}/rotate`, rootToken);
      expect([res.statusCode, res.json()]).toEqual([400, { message }]);
    }
    const aliceToken = await makePat(db, alice, ['api']);
    const foreign = await call('POST', `/personal_access_tokens/${(await rowOf(rootToken)).id}/rotate`, aliceToken);
    expect([foreign.statusCode, foreign.json()]).toEqual([401, { message: '401 Unauthorized' }]);
    const none = await call('POST', '/personal_access_tokens/999999/rotate', rootToken);
    expect([none.statusCode, none.json()]).toEqual([404, { message: '404 Not Found' }]);
    const oauth = await makeOAuthToken(db, alice, ['api']);
    const o = await app.inject({
      method: 'POST',
      url: '/api/v4/personal_access_tokens/self/rotate',
      headers: { authorization: `Bearer ${oauth}` },
    });
    expect([o.statusCode, o.json()]).toEqual([405, { message: '405 Method Not Allowed' }]);
  });

  it('concurrent rotations of one token: exactly one wins, the others are refused and write nothing', async () => {
    const token = await makePat(db, alice, ['api']);
    const { id } = await rowOf(token);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => call('POST', `/personal_access_tokens/${id}/rotate`, rootToken)),
    );
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, 400, 400, 400, 400, 400, 400, 400]);
    for (const r of results.filter((r) => r.statusCode === 400))
      expect(r.json()).toEqual({ message: '400 Bad request - Token already revoked' });
    const successors = await db
      .selectFrom('personal_access_tokens')
      .select('id')
      .where('previous_personal_access_token_id', '=', id)
      .execute();
    expect(successors).toHaveLength(1);
  });

  it('the rotation chain: rotate twice, present the first token, and the whole chain is revoked', async () => {
    const first = await makePat(db, bob, ['api']);
    const second = (await call('POST', '/personal_access_tokens/self/rotate', first)).json().token as string;
    const third = (await call('POST', '/personal_access_tokens/self/rotate', second)).json().token as string;
    expect((await call('GET', '/user', third)).statusCode).toBe(200);

    const stolen = await call('GET', '/user', first);
    expect([stolen.statusCode, stolen.json()]).toEqual([
      401,
      { error: 'invalid_token', error_description: 'Token was revoked. You have to re-authorize from the user.' },
    ]);
    const newest = await call('GET', '/user', third);
    expect([newest.statusCode, newest.json().error_description]).toEqual([
      401,
      'Token was revoked. You have to re-authorize from the user.',
    ]);
    const [firstRow, thirdRow] = [await rowOf(first), await rowOf(third)];
    expect((await auditRows('personal_access_token.revoke_family')).at(-1)).toEqual({
      actor: 'system',
      target_type: 'personal_access_token',
      target_id: String(firstRow.id),
      details: { reason: 'a token revoked by rotation was presented', revoked_ids: [thirdRow.id] },
      ip_address: '127.0.0.1',
    });
    // A token revoked without rotation has no chain: presenting it revokes nothing else.
    const lone = await makePat(db, bob, ['api']);
    const other = await makePat(db, bob, ['api']);
    await call('DELETE', '/personal_access_tokens/self', lone);
    expect((await call('GET', '/user', lone)).statusCode).toBe(401);
    expect((await call('GET', '/user', other)).statusCode).toBe(200);
  });
});

describe('POST /users/:id/personal_access_tokens', () => {
  it('administrators create a token for a user: 201 with the value once', async () => {
    const res = await call('POST', `/users/${alice.id}/personal_access_tokens`, rootToken, {
      name: 'ci',
      scopes: ['read_api', 'api'],
      expires_at: inDays(30),
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toEqual(await expectedBody(body.token, { token: body.token }));
    expect([body.name, body.scopes, body.user_id, body.expires_at]).toEqual([
      'ci',
      ['api', 'read_api'],
      alice.id,
      inDays(30),
    ]);
    expect((await call('GET', '/user', body.token)).json().username).toBe('alice');
    expect((await auditRows('personal_access_token.create')).at(-1)).toEqual({
      actor: 'user:root',
      target_type: 'personal_access_token',
      target_id: String(body.id),
      details: { user: 'alice', name: 'ci', scopes: ['read_api', 'api'] },
      ip_address: '127.0.0.1',
    });
    // Comma-separated scopes in a form body, no expiry.
    const form = await app.inject({
      method: 'POST',
      url: `/api/v4/users/${bob.id}/personal_access_tokens`,
      headers: { 'private-token': rootToken, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'name=deploy&scopes=read_api,read_user',
    });
    expect([form.statusCode, form.json().scopes, form.json().expires_at]).toEqual([
      201,
      ['read_api', 'read_user'],
      null,
    ]);
  });

  it("GitLab's errors, and nothing is written", async () => {
    const before = await db
      .selectFrom('personal_access_tokens')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const aliceToken = await makePat(db, alice, ['api']);
    const cases: Array<[string, string, Record<string, unknown>, number, unknown]> = [
      [
        aliceToken,
        `/users/${bob.id}/personal_access_tokens`,
        { name: 'x', scopes: ['api'] },
        403,
        { message: '403 Forbidden' },
      ],
      [
        rootToken,
        '/users/999999/personal_access_tokens',
        { name: 'x', scopes: ['api'] },
        404,
        { message: '404 User Not Found' },
      ],
      [rootToken, `/users/${bob.id}/personal_access_tokens`, {}, 400, { error: 'name is missing, scopes is missing' }],
      [
        rootToken,
        `/users/${bob.id}/personal_access_tokens`,
        { name: 'x', scopes: ['write'] },
        400,
        { error: 'scopes does not have a valid value' },
      ],
      [
        rootToken,
        `/users/${bob.id}/personal_access_tokens`,
        { name: 'x', scopes: ['api'], expires_at: '31/12/2030' },
        400,
        { error: 'expires_at is invalid' },
      ],
      [
        rootToken,
        `/users/${bob.id}/personal_access_tokens`,
        { name: 'x', scopes: ['api'], expires_at: '2020-01-01' },
        400,
        { message: { expires_at: ['must not be in the past'] } },
      ],
      [
        rootToken,
        `/users/${bob.id}/personal_access_tokens`,
        { name: 'x', scopes: ['api', 'sudo'] },
        400,
        { message: { scopes: ['can only contain available scopes'] } },
      ],
    ];
    for (const [token, url, payload, status, body] of cases) {
      const res = await call('POST', url, token, payload);
      expect([url, payload, res.statusCode, res.json()]).toEqual([url, payload, status, body]);
    }
    const after = await db
      .selectFrom('personal_access_tokens')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n) + 1); // only aliceToken, made above
  });
});
