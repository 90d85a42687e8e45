// Regression (issue 11, "a client that retries a refresh after a timeout loses its whole grant"):
// contract §2 "Refresh retries". Within refreshReuseLeeway seconds of its rotation, the same
// client presenting the refresh token again gets a fresh pair and nothing is revoked — while the
// token it was rotated into has not been presented, and at most twice per rotation (issue 22);
// otherwise it is a replay and every pair handed out for it dies. 50-way races inside and
// outside the leeway.
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { ConfigError, loadConfig } from '../../service/config';
import { testConfig } from '../support/app';
import { resetDatabase } from '../support/db';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';
import { obtainCode, WebClient } from '../oauth/support/browser-like';
import { INVALID_TOKEN_BODY } from '../oauth/support/contract';

const f = useFixture({ max: 20 });
const INVALID_GRANT = {
  error: 'invalid_grant',
  error_description:
    'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
};

let noLeeway: FastifyInstance;
let c: Awaited<ReturnType<typeof makeApp>>;
let other: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;
beforeAll(async () => {
  noLeeway = await buildApp({ db: f.db, config: testConfig({ refreshReuseLeeway: 0 }), logger: false });
});
afterAll(() => noLeeway?.close());
beforeEach(async () => {
  await resetDatabase(f.db);
  await makeUser(f.db, 'alice');
  c = await makeApp(f.db);
  other = await makeApp(f.db, { name: 'Other' });
  web = new WebClient(f.app);
  await web.signIn('alice', PASSWORD);
});

const refresh = (rt: string, app = f.app, client = c) =>
  app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { ...FORM, authorization: basic(client.clientId, client.secret) },
    payload: form({ grant_type: 'refresh_token', refresh_token: rt }),
  });
const info = (t: string) => f.app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${t}` } });

/** A dead token at /oauth/token/info: the contract's exact 401 (not just the status). */
async function expectDead(t: string) {
  const res = await info(t);
  expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 401, body: INVALID_TOKEN_BODY });
  expect(res.headers['cache-control']).toBe('no-store');
}
async function firstPair() {
  const code = await obtainCode(web, c.clientId);
  return (
    await f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: form({ grant_type: 'authorization_code', code, redirect_uri: 'https://client.example/callback' }),
    })
  ).json();
}
const ageRotations = (seconds: number) =>
  f.db
    .updateTable('oauth_access_tokens')
    .set({ refreshed_at: sql`refreshed_at - make_interval(secs => ${seconds})` })
    .where('refreshed_at', 'is not', null)
    .execute();
const liveCount = async () =>
  (await f.db.selectFrom('oauth_access_tokens').select('id').where('revoked_at', 'is', null).execute()).length;

describe('a client that retries a refresh after a timeout loses its whole grant', () => {
  it('a retry after a lost response gets a fresh pair; both pairs live; another client gets invalid_grant', async () => {
    const t0 = await firstPair();
    const lost = (await refresh(t0.refresh_token)).json(); // the response the client never saw
    const retry = await refresh(t0.refresh_token);
    expect(retry.statusCode).toBe(200);
    const t1 = retry.json();
    expect(t1.access_token).not.toBe(lost.access_token);
    expect(t1.refresh_token).not.toBe(lost.refresh_token);
    for (const t of [t0, lost, t1]) expect((await info(t.access_token)).statusCode).toBe(200);
    expect((await refresh(t1.refresh_token)).statusCode).toBe(200);
    // The leeway is for the same client only, and another client's presentation revokes nothing.
    const stranger = await refresh(t0.refresh_token, f.app, other);
    expect({ status: stranger.statusCode, body: stranger.json() }).toEqual({ status: 400, body: INVALID_GRANT });
    expect((await info(lost.access_token)).statusCode).toBe(200);
  });

  it('29 s after the rotation still a retry; 31 s after, a replay revoking every pair handed out for it', async () => {
    const t0 = await firstPair();
    const a = (await refresh(t0.refresh_token)).json();
    await ageRotations(29);
    const b = await refresh(t0.refresh_token);
    expect(b.statusCode).toBe(200);
    // The leeway runs from the rotation, not from the last retry.
    await ageRotations(2);
    const replay = await refresh(t0.refresh_token);
    expect({ status: replay.statusCode, body: replay.json() }).toEqual({ status: 400, body: INVALID_GRANT });
    for (const t of [a, b.json()]) await expectDead(t.access_token);
    expect((await info(t0.access_token)).statusCode).toBe(200);
  });

  it('50-way race inside the leeway: the rotation and 2 retries get pairs, the 4th presentation is a replay revoking them all', async () => {
    const t0 = await firstPair();
    const results = await Promise.all(Array.from({ length: 50 }, () => refresh(t0.refresh_token)));
    const statuses = results.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    for (const r of results.filter((r) => r.statusCode !== 200))
      expect({ status: r.statusCode, body: r.json() }).toEqual({ status: 400, body: INVALID_GRANT });
    const pairs = results.filter((r) => r.statusCode === 200).map((r) => r.json());
    expect(new Set(pairs.map((p) => p.refresh_token)).size).toBe(3);
    // The replay revoked every pair handed out for t0; t0's own access token lives until it expires.
    expect(await liveCount()).toBe(1);
    for (const p of pairs) {
      await expectDead(p.access_token);
      expect((await refresh(p.refresh_token)).json()).toEqual(INVALID_GRANT);
    }
  });

  it('at most 2 retries per rotation: the third retry is a replay, inside the leeway', async () => {
    const t0 = await firstPair();
    const handedOut = [];
    for (let i = 0; i < 3; i++) {
      const res = await refresh(t0.refresh_token); // the rotation, then retries 1 and 2
      expect(res.statusCode).toBe(200);
      handedOut.push(res.json());
    }
    expect(await liveCount()).toBe(4);
    const third = await refresh(t0.refresh_token);
    expect({ status: third.statusCode, body: third.json() }).toEqual({ status: 400, body: INVALID_GRANT });
    for (const t of handedOut) await expectDead(t.access_token);
    expect((await info(t0.access_token)).statusCode).toBe(200);
  });

  it('once the token it was rotated into has been presented, the old one is a replay, inside the leeway', async () => {
    const t0 = await firstPair();
    const t1 = (await refresh(t0.refresh_token)).json();
    const t2 = await refresh(t1.refresh_token);
    expect(t2.statusCode).toBe(200);
    const late = await refresh(t0.refresh_token);
    expect({ status: late.statusCode, body: late.json() }).toEqual({ status: 400, body: INVALID_GRANT });
    // Every token descended from t0 is dead: t1's pair and the pair t1 was rotated into.
    await expectDead(t1.access_token);
    await expectDead(t2.json().access_token);
    expect((await refresh(t2.json().refresh_token)).json()).toEqual(INVALID_GRANT);
  });

  it('50-way race with the leeway at 0: exactly one wins, nothing revoked; the next presentation is a replay', async () => {
    const t0 = await firstPair();
    const results = await Promise.all(Array.from({ length: 50 }, () => refresh(t0.refresh_token, noLeeway)));
    const winners = results.filter((r) => r.statusCode === 200);
    expect(winners).toHaveLength(1);
    for (const r of results.filter((r) => r.statusCode !== 200)) {
      expect({ status: r.statusCode, body: r.json() }).toEqual({ status: 400, body: INVALID_GRANT });
    }
    expect(await liveCount()).toBe(2);
    expect((await refresh(t0.refresh_token, noLeeway)).json()).toEqual(INVALID_GRANT);
    await expectDead(winners[0].json().access_token);
  });

  it('REFRESH_REUSE_LEEWAY: default 30, 0–60 whole seconds, anything else refused', () => {
    expect(loadConfig({}).refreshReuseLeeway).toBe(30);
    expect(loadConfig({ REFRESH_REUSE_LEEWAY: '0' }).refreshReuseLeeway).toBe(0);
    expect(loadConfig({ REFRESH_REUSE_LEEWAY: '60' }).refreshReuseLeeway).toBe(60);
    for (const bad of ['61', '-1', '1.5', 'abc', '30s']) {
      expect(() => loadConfig({ REFRESH_REUSE_LEEWAY: bad })).toThrow(ConfigError);
    }
    expect(() => loadConfig({ REFRESH_REUSE_LEEWAY: '61' })).toThrow(
      'REFRESH_REUSE_LEEWAY must be a whole number of seconds from 0 to 60 (got "61")',
    );
  });
});
