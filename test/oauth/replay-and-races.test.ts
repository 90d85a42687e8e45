// Replays and races on real PostgreSQL: a code is single-use and its replay revokes what it
// issued; refresh rotation with replay revoking descendants; concurrent exchanges of one code:
// exactly one wins (row locks, not luck). Concurrent presentations of one refresh token are
// retries within the refresh reuse leeway (each gets a fresh pair); with the leeway at 0 exactly
// one wins.
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../service/domain/secrets';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { buildApp } from '../../service/app';
import { testConfig } from '../support/app';
import { resetDatabase } from '../support/db';
import { obtainCode, WebClient } from './support/browser-like';
import { errorBody, INVALID_TOKEN_BODY } from './support/contract';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

// A pool big enough that concurrent requests really run in parallel transactions.
const f = useFixture({ max: 20 });
let c: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;

beforeEach(async () => {
  await resetDatabase(f.db);
  await makeUser(f.db, 'alice');
  c = await makeApp(f.db);
  web = new WebClient(f.app);
  await web.signIn('alice', PASSWORD);
});

/** The same database served with the leeway turned off (REFRESH_REUSE_LEEWAY=0). */
let noLeeway: FastifyInstance;
beforeAll(async () => {
  noLeeway = await buildApp({ db: f.db, config: testConfig({ refreshReuseLeeway: 0 }), logger: false });
});
afterAll(() => noLeeway?.close());

/** Move every rotation `seconds` into the past: a presentation now is "later" than the leeway. */
const ageRotations = (seconds: number) =>
  f.db
    .updateTable('oauth_access_tokens')
    .set({ refreshed_at: sql`refreshed_at - make_interval(secs => ${seconds})` })
    .where('refreshed_at', 'is not', null)
    .execute();

const token = (values: Record<string, string | undefined>, app = f.app) =>
  app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
    payload: form(values),
  });
const info = (t: string) => f.app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${t}` } });

/** A dead token at /oauth/token/info: the contract's exact 401 (not just the status). */
async function expectDead(t: string) {
  const res = await info(t);
  expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 401, body: INVALID_TOKEN_BODY });
  expect(res.headers['cache-control']).toBe('no-store');
}
const exchange = (code: string) => token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
const refresh = (rt: string, app = f.app) => token({ grant_type: 'refresh_token', refresh_token: rt }, app);

describe('authorization code replay', () => {
  it('a second use fails with invalid_grant and revokes the tokens issued from the code, refreshed ones included', async () => {
    const code = await obtainCode(web, c.clientId);
    const first = (await exchange(code)).json();
    const second = (await refresh(first.refresh_token)).json();
    const third = (await refresh(second.refresh_token)).json();
    expect((await info(third.access_token)).statusCode).toBe(200);

    const replay = await exchange(code);
    expect(replay.statusCode).toBe(400);
    expect(replay.json()).toEqual(errorBody('invalid_grant'));
    for (const t of [first.access_token, second.access_token, third.access_token]) await expectDead(t);
    expect((await refresh(third.refresh_token)).json()).toEqual(errorBody('invalid_grant'));
  });

  it('concurrent exchanges of one code: exactly one succeeds', async () => {
    for (let round = 0; round < 3; round++) {
      const code = await obtainCode(web, c.clientId);
      const results = await Promise.all(Array.from({ length: 8 }, () => exchange(code)));
      const statuses = results.map((r) => r.statusCode).sort();
      expect(statuses).toEqual([200, 400, 400, 400, 400, 400, 400, 400]);
      for (const r of results.filter((r) => r.statusCode === 400)) expect(r.json()).toEqual(errorBody('invalid_grant'));
      // One token row was ever issued from the code (and the losers' replays revoked it).
      const rows = await f.db
        .selectFrom('oauth_access_tokens')
        .select(['id', 'revoked_at'])
        .where('authorization_code_id', 'is not', null)
        .execute();
      expect(rows).toHaveLength(round + 1);
      expect(rows.every((r) => r.revoked_at !== null)).toBe(true);
    }
  });
});

describe('the row lock itself', () => {
  it('an exchange waits on PostgreSQL for a transaction holding the code, then sees it used', async () => {
    const code = await obtainCode(web, c.clientId);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = f.db.transaction().execute(async (trx) => {
      await sql`select id from oauth_authorization_codes where code_digest = ${sha256Hex(code)} for update`.execute(
        trx,
      );
      await sql`update oauth_authorization_codes set used_at = now() where code_digest = ${sha256Hex(code)}`.execute(
        trx,
      );
      locked();
      await held;
    });
    await isLocked;
    const pending = exchange(code);
    // The exchange's SELECT … FOR UPDATE is blocked on the row lock, in PostgreSQL.
    for (let i = 0; ; i++) {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query ilike '%for update%'`.execute(f.db);
      if (rows[0].n === 1) break;
      if (i > 200) throw new Error('the exchange never waited on the lock');
      await new Promise((r) => setTimeout(r, 10));
    }
    release();
    await holder;
    const res = await pending;
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(errorBody('invalid_grant'));
  });
});

describe('refresh token rotation', () => {
  it('replaying a used refresh token revokes every token descended from it; its own and earlier access tokens live on', async () => {
    const t0 = (await exchange(await obtainCode(web, c.clientId))).json();
    const t1 = (await refresh(t0.refresh_token)).json();
    const t2 = (await refresh(t1.refresh_token)).json();
    const t3 = (await refresh(t2.refresh_token)).json();
    // Rotation leaves the previous access tokens valid until they expire.
    for (const t of [t0, t1, t2, t3]) expect((await info(t.access_token)).statusCode).toBe(200);

    await ageRotations(31); // past the default 30 s leeway: a replay, not a retry
    const replay = await refresh(t1.refresh_token);
    expect(replay.statusCode).toBe(400);
    expect(replay.json()).toEqual(errorBody('invalid_grant'));
    for (const t of [t0, t1]) expect((await info(t.access_token)).statusCode).toBe(200);
    for (const t of [t2, t3]) await expectDead(t.access_token);
    expect((await refresh(t3.refresh_token)).json()).toEqual(errorBody('invalid_grant'));
  });

  it('concurrent refreshes of one refresh token within the leeway and its retry budget (the rotation + 2 retries): each gets a fresh pair, nothing revoked; a later replay revokes them all', async () => {
    const t0 = (await exchange(await obtainCode(web, c.clientId))).json();
    const results = await Promise.all(Array.from({ length: 3 }, () => refresh(t0.refresh_token)));
    expect(results.map((r) => r.statusCode)).toEqual(Array(3).fill(200));
    const pairs = results.map((r) => r.json());
    expect(new Set(pairs.map((p) => p.access_token)).size).toBe(3);
    for (const p of [t0, ...pairs]) expect((await info(p.access_token)).statusCode).toBe(200);
    // Every pair is a child of t0's row, in its family.
    const children = await f.db
      .selectFrom('oauth_access_tokens')
      .select(['parent_id', 'family_id', 'revoked_at'])
      .where('parent_id', 'is not', null)
      .execute();
    expect(children).toEqual(Array(3).fill({ parent_id: 1, family_id: 1, revoked_at: null }));
    // Any of them rotates on normally.
    const next = (await refresh(pairs[2].refresh_token)).json();
    expect((await info(next.access_token)).statusCode).toBe(200);
    // Later, t0's refresh token is a replay: every pair handed out for it dies, and their descendants.
    await ageRotations(31);
    expect((await refresh(t0.refresh_token)).json()).toEqual(errorBody('invalid_grant'));
    for (const p of [...pairs, next]) await expectDead(p.access_token);
    expect((await info(t0.access_token)).statusCode).toBe(200);
  });

  it('with the leeway at 0, concurrent refreshes of one refresh token: exactly one wins, and the winner stays valid', async () => {
    for (let round = 0; round < 3; round++) {
      const t0 = (await exchange(await obtainCode(web, c.clientId))).json();
      const results = await Promise.all(Array.from({ length: 8 }, () => refresh(t0.refresh_token, noLeeway)));
      const winners = results.filter((r) => r.statusCode === 200);
      expect(winners).toHaveLength(1);
      for (const r of results.filter((r) => r.statusCode !== 200)) {
        expect(r.statusCode).toBe(400);
        expect(r.json()).toEqual(errorBody('invalid_grant'));
      }
      // The losers were in flight when the winner rotated the token: a lost race, not a replay,
      // so the winner's new pair stays valid (one new row) — and so does the old access token.
      const win = winners[0].json();
      expect((await info(win.access_token)).statusCode).toBe(200);
      expect((await info(t0.access_token)).statusCode).toBe(200);
      expect(
        await f.db
          .selectFrom('oauth_access_tokens')
          .select('id')
          .where('parent_id', 'is not', null)
          .where('revoked_at', 'is', null)
          .execute(),
      ).toHaveLength(1);
      // The winner's refresh token rotates on normally.
      expect((await refresh(win.refresh_token, noLeeway)).statusCode).toBe(200);
      // Sent again now, after the rotation, the old refresh token is a replay: descendants revoked.
      expect((await refresh(t0.refresh_token, noLeeway)).json()).toEqual(errorBody('invalid_grant'));
      await expectDead(win.access_token);
    }
  });

  it('a lost response: the client may keep using the previous access token while a refresh is in flight', async () => {
    const t0 = (await exchange(await obtainCode(web, c.clientId))).json();
    const [r, i] = await Promise.all([refresh(t0.refresh_token), info(t0.access_token)]);
    expect(r.statusCode).toBe(200);
    expect(i.statusCode).toBe(200);
    expect((await info(t0.access_token)).statusCode).toBe(200);
  });
});
