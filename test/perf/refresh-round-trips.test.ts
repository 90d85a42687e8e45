// How many round trips to PostgreSQL the refresh_token grant takes (issue 15), counted on the real
// app over a recording database handle (every statement sent, BEGIN and COMMIT included), with
// the guarantees the one-statement rotation must keep.
// A confidential client's refresh without openid is 1 statement: the rotation checks the client's
// secret and the address's rate-limit counter itself (2 before issue 30: the client, then the
// rotation); a wrong secret, or any from an address with failures in its window, takes the
// rotation a second time with the check that counts; with openid the rotation stays inside a transaction, so the ID token is signed before
// it commits.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { issueAccessToken } from '../../service/domain/oauth-tokens';
import { testConfig } from '../support/app';
import { resetDatabase } from '../support/db';
import { type CountingDb, countingDb } from '../support/statement-counter';
import { obtainCode, WebClient } from '../oauth/support/browser-like';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from '../oauth/support/harness';

const f = useFixture();
let counter: CountingDb;
let app: FastifyInstance;
let noLeeway: FastifyInstance;

beforeAll(async () => {
  counter = countingDb(f.handle);
  app = await buildApp({
    db: counter.db,
    config: testConfig({ publicUrl: 'https://lanyard.example.com', home: mkdtempSync(path.join(tmpdir(), 'rt-')) }),
    logger: false,
  });
  noLeeway = await buildApp({ db: counter.db, config: testConfig({ refreshReuseLeeway: 0 }), logger: false });
});
afterAll(async () => {
  await app?.close();
  await noLeeway?.close();
});

let client: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;
beforeEach(async () => {
  await resetDatabase(f.db);
  await makeUser(f.db, 'alice');
  client = await makeApp(f.db, { scopes: 'read_user openid' });
  web = new WebClient(app);
  await web.signIn('alice', PASSWORD);
});

async function firstPair(scope: string) {
  const code = await obtainCode(web, client.clientId, { scope });
  const res = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { ...FORM, authorization: basic(client.clientId, client.secret) },
    payload: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
  });
  expect(res.statusCode).toBe(200);
  return res.json();
}

/** Refresh, returning the response and the statements it sent. */
async function countedRefresh(refreshToken: string, extra: Record<string, string> = {}) {
  counter.reset();
  const res = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { ...FORM, authorization: basic(client.clientId, client.secret) },
    payload: form({ grant_type: 'refresh_token', refresh_token: refreshToken, ...extra }),
  });
  return { res, statements: [...counter.statements] };
}

describe('round trips of the refresh_token grant', () => {
  it('confidential client, no openid: 1 statement (client + throttle + the rotation), no transaction', async () => {
    const t0 = await firstPair('read_user');
    const { res, statements } = await countedRefresh(t0.refresh_token);
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('read_user');
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/from oauth_applications where uid/);
    expect(statements[0]).toMatch(/rate_limit_counters/);
    expect(statements[0]).toMatch(/for update/);
    expect(statements[0]).toMatch(/insert into oauth_access_tokens/);
    // The new pair rotates at the same cost.
    const again = await countedRefresh(res.json().refresh_token);
    expect(again.res.statusCode).toBe(200);
    expect(again.statements).toHaveLength(1);
    // The same statement (text) each time: a prepared statement, compiled once.
    expect(again.statements[0]).toBe(statements[0]);
  });

  it('a public client sending no credentials: 1 statement', async () => {
    const pub = await makeApp(f.db, { name: 'Public', confidential: false, scopes: 'read_user' });
    const user = await f.db.selectFrom('users').select('id').executeTakeFirstOrThrow();
    const first = await issueAccessToken(f.db, {
      applicationId: pub.application.id,
      userId: user.id,
      scopes: ['read_user'],
      withRefreshToken: true,
    });
    counter.reset();
    const res = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: FORM,
      payload: form({ grant_type: 'refresh_token', refresh_token: first.refreshToken! }),
    });
    expect(res.statusCode).toBe(200);
    expect(counter.statements).toHaveLength(1);
  });

  it('narrowing an openid token to read_user: 1 statement, no ID token', async () => {
    const t0 = await firstPair('read_user openid');
    const { res, statements } = await countedRefresh(t0.refresh_token, { scope: 'read_user' });
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('read_user');
    expect(res.json().id_token).toBeUndefined();
    expect(statements).toHaveLength(1);
  });

  it('a retry within the leeway: 1 statement too', async () => {
    const t0 = await firstPair('read_user');
    expect((await countedRefresh(t0.refresh_token)).res.statusCode).toBe(200);
    const { res, statements } = await countedRefresh(t0.refresh_token);
    expect(res.statusCode).toBe(200);
    expect(statements).toHaveLength(1);
  });

  it('with openid: the rotation runs inside BEGIN … COMMIT, the ID token signed before COMMIT (5 statements)', async () => {
    const t0 = await firstPair('read_user openid');
    const { res, statements } = await countedRefresh(t0.refresh_token);
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('openid read_user');
    expect(typeof res.json().id_token).toBe('string');
    // The lone rotation with the client's secret, which finds openid and changes nothing; then
    // BEGIN, the rotation, the user for the ID token's claims, COMMIT.
    expect(statements).toHaveLength(5);
    expect(statements[0]).toMatch(/rate_limit_counters/);
    expect(statements[1]).toBe('begin');
    expect(statements[2]).toMatch(/insert into oauth_access_tokens/);
    expect(statements[2]).not.toMatch(/rate_limit_counters/);
    expect(statements[3]).toMatch(/from "users"/);
    expect(statements[4]).toBe('commit');
  });

  it('with openid asked for by name: straight into the transaction (5 statements)', async () => {
    const t0 = await firstPair('read_user openid');
    const { res, statements } = await countedRefresh(t0.refresh_token, { scope: 'openid' });
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('openid');
    expect(typeof res.json().id_token).toBe('string');
    expect(statements).toHaveLength(5);
    expect(statements[1]).toBe('begin');
    expect(statements[2]).toMatch(/insert into oauth_access_tokens/);
    expect(statements[4]).toBe('commit');
  });
});

describe('what the one statement keeps', () => {
  const rows = () =>
    f.db
      .selectFrom('oauth_access_tokens')
      .select(['id', 'parent_id', 'scopes', 'refreshed_at', 'revoked_at'])
      .orderBy('id')
      .execute();
  const INVALID_SCOPE = {
    error: 'invalid_scope',
    error_description: 'The requested scope is invalid, unknown, or malformed.',
  };

  it('a wider or unparsable scope: invalid_scope and nothing changes (the token then rotates)', async () => {
    const t0 = await firstPair('read_user');
    const before = await rows();
    for (const scope of ['read_user openid', 'api', 'nonsense', ',,']) {
      const { res } = await countedRefresh(t0.refresh_token, { scope });
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: INVALID_SCOPE });
    }
    expect(await rows()).toEqual(before);
    expect((await countedRefresh(t0.refresh_token)).res.statusCode).toBe(200);
  });

  it('an openid refresh for a blocked user: invalid_grant, nothing changes', async () => {
    const t0 = await firstPair('read_user openid');
    const before = await rows();
    await f.db.updateTable('users').set({ state: 'blocked' }).execute();
    const { res } = await countedRefresh(t0.refresh_token);
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 400,
      body: {
        error: 'invalid_grant',
        error_description:
          'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
      },
    });
    expect(res.headers['cache-control']).toBe('no-store');
    expect(await rows()).toEqual(before);
  });

  it('an ID token that cannot be signed spends nothing: 500, then the same refresh token works', async () => {
    const t0 = await firstPair('read_user openid');
    const broken = await buildApp({
      db: counter.db,
      config: testConfig(),
      signingKeys: { load: () => Promise.reject(new Error('no signing key')) },
      logger: false,
    });
    try {
      const before = await rows();
      const res = await broken.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { ...FORM, authorization: basic(client.clientId, client.secret) },
        payload: form({ grant_type: 'refresh_token', refresh_token: t0.refresh_token }),
      });
      expect(res.statusCode).toBe(500);
      expect(await rows()).toEqual(before);
    } finally {
      await broken.close();
    }
    const { res } = await countedRefresh(t0.refresh_token);
    expect(res.statusCode).toBe(200);
    expect(typeof res.json().id_token).toBe('string');
    // Not taken for a retry of a spent token: the first rotation, so it was stamped.
    expect((await rows()).filter((r) => r.refreshed_at !== null)).toHaveLength(1);
  });

  for (const leeway of [30, 0]) {
    it(`leeway ${leeway}: a rotation blocked on the row lock re-reads the row and sees the winner's stamp`, async () => {
      const t0 = await firstPair('read_user');
      const target = leeway === 30 ? app : noLeeway;
      const tokenId = (await rows())[0].id;
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const stamp = new Date(Date.now() + 5_000); // the winner's rotation, after the request arrived
      const holder = f.db.transaction().execute(async (trx) => {
        await trx.selectFrom('oauth_access_tokens').select('id').where('id', '=', tokenId).forUpdate().execute();
        locked();
        await held;
        await trx.updateTable('oauth_access_tokens').set({ refreshed_at: stamp }).where('id', '=', tokenId).execute();
      });
      await isLocked;
      const pending = target.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { ...FORM, authorization: basic(client.clientId, client.secret) },
        payload: form({ grant_type: 'refresh_token', refresh_token: t0.refresh_token }),
      });
      // The rotation statement waits on the row lock, in PostgreSQL.
      for (let i = 0; ; i++) {
        const { rows: waiting } = await sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query ilike '%for update%'`.execute(f.db);
        if (waiting[0].n === 1) break;
        if (i > 200) throw new Error('the rotation never waited on the lock');
        await new Promise((r) => setTimeout(r, 10));
      }
      release();
      await holder;
      const res = await pending;
      const after = await rows();
      // Either way the winner's stamp stays and nothing is revoked.
      expect(after[0].refreshed_at).toEqual(stamp);
      expect(after.every((r) => r.revoked_at === null)).toBe(true);
      if (leeway === 30) {
        // In flight during the rotation, within the leeway: a retry, another child of the token.
        expect(res.statusCode).toBe(200);
        expect(after.map((r) => r.parent_id)).toEqual([null, tokenId]);
      } else {
        // With no leeway, a lost race: refused, nothing revoked, nothing issued.
        expect({ status: res.statusCode, body: res.json().error }).toEqual({ status: 400, body: 'invalid_grant' });
        expect(after).toHaveLength(1);
      }
    });
  }

  it('a wrong secret with a live refresh token: 401, nothing rotated, one failure counted, in 2 statements', async () => {
    const t0 = await firstPair('read_user');
    const before = await rows();
    const ip = '203.0.113.10';
    counter.reset();
    const res = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      remoteAddress: ip,
      headers: { ...FORM, authorization: basic(client.clientId, 'wrong') },
      payload: form({ grant_type: 'refresh_token', refresh_token: t0.refresh_token }),
    });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({
      error: 'invalid_client',
      error_description:
        'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
    });
    // The quick check, which decides only a right secret from an address with no counter (and
    // writes nothing), then the rotation again with the check that counts the failure.
    expect(counter.statements).toHaveLength(2);
    expect(counter.statements[0]).not.toMatch(/insert into rate_limit_counters/);
    expect(counter.statements[1]).toMatch(/insert into rate_limit_counters/);
    expect(await rows()).toEqual(before);
    expect(await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).execute()).toEqual([
      { key: `failures:addr:${ip}`, count: 1 },
    ]);
    // The right secret then rotates the same token: the refusal spent nothing. From that address
    // (a failure in its window) it takes the counting check too, and counts nothing.
    counter.reset();
    const ok = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      remoteAddress: ip,
      headers: { ...FORM, authorization: basic(client.clientId, client.secret) },
      payload: form({ grant_type: 'refresh_token', refresh_token: t0.refresh_token }),
    });
    expect(ok.statusCode).toBe(200);
    expect(counter.statements).toHaveLength(2);
    expect(await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).execute()).toEqual([
      { key: `failures:addr:${ip}`, count: 1 },
    ]);
    // From an address without failures: the quick check alone.
    const { res: again, statements } = await countedRefresh(ok.json().refresh_token);
    expect(again.statusCode).toBe(200);
    expect(statements).toHaveLength(1);
    expect(statements[0]).not.toMatch(/insert into rate_limit_counters/);
  });

  it("another application's right secret with this application's token: invalid_grant, nothing changes or counts", async () => {
    const t0 = await firstPair('read_user');
    const other = await makeApp(f.db, { name: 'Other', scopes: 'read_user' });
    const before = await rows();
    const res = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, authorization: basic(other.clientId, other.secret) },
      payload: form({ grant_type: 'refresh_token', refresh_token: t0.refresh_token }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_grant');
    expect(await rows()).toEqual(before);
    expect(await f.db.selectFrom('rate_limit_counters').select('key').execute()).toEqual([]);
  });

  it('client authentication reads the throttle in the same query: an unknown client_id is throttled too', async () => {
    const ip = '203.0.113.9';
    const attempt = (id: string, secret: string) =>
      app.inject({
        method: 'POST',
        url: '/oauth/token',
        remoteAddress: ip,
        headers: { ...FORM, authorization: basic(id, secret) },
        payload: form({ grant_type: 'refresh_token', refresh_token: 'x' }),
      });
    // Wrong secrets and unknown clients both count.
    for (let i = 0; i < 30; i++) expect((await attempt(client.clientId, 'wrong')).statusCode).toBe(401);
    for (let i = 0; i < 30; i++) expect((await attempt('f'.repeat(64), 'wrong')).statusCode).toBe(401);
    const counter = await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).execute();
    expect(counter).toEqual([{ key: `failures:addr:${ip}`, count: 60 }]);
    for (const [id, secret] of [
      ['f'.repeat(64), 'wrong'],
      [client.clientId, client.secret],
    ]) {
      const res = await attempt(id, secret);
      expect(res.statusCode).toBe(429);
      expect(res.json()).toEqual({ error: 'slow_down', error_description: 'Too many failed attempts. Retry later.' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(res.headers['ratelimit-observed']).toBe('60');
    }
    // Refused before the check: the throttled attempts were not counted.
    expect(await f.db.selectFrom('rate_limit_counters').select('count').executeTakeFirst()).toEqual({ count: 60 });
  });
});
