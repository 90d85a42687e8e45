// Back-Channel Logout 1.0 through the real app on real PostgreSQL and a real HTTP relying party:
// each way a session ends (sign-out, end_session, password change, block, revoke from the page,
// the retention job) queues a logout token for exactly the applications that received an ID token
// in it; the sender signs it (typ logout+jwt, verified here against our JWKS with jose) and POSTs
// it; a relying party that fails, redirects or hangs is retried, then given up and listed.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signingKeyPolicy } from '../../service/config';
import { listLogoutDeliveries } from '../../service/domain/backchannel-logout';
import { pruneExpiredData } from '../../service/domain/retention';
import { fileSigningKeySource } from '../../service/local/signing-key-file';
import { drainLogoutsOnce, type LogoutRoundReport } from '../../service/mail/backchannel-sender';
import { runIn } from '../admin-cli/support';
import { makePat } from '../support/api-fixtures';
import { resetDatabase } from '../support/db';
import { obtainCode, WebClient } from './support/browser-like';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const ISSUER = 'https://lanyard.example.com';
const f = useFixture({ config: { publicUrl: ISSUER } });

/** The relying parties' back-channel endpoints: what each path answers, and every POST received. */
const received: Array<{ path: string; contentType: string; body: URLSearchParams }> = [];
let rpServer: http.Server;
let rpBase: string;
const hanging = new Set<http.ServerResponse>();
/** /flaky answers 503 until a test brings it back. */
let flakyUp = false;

beforeAll(async () => {
  rpServer = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const path = req.url ?? '';
      received.push({ path, contentType: req.headers['content-type'] ?? '', body: new URLSearchParams(body) });
      if (path.startsWith('/ok')) return res.writeHead(200).end();
      if (path.startsWith('/fail')) return res.writeHead(503).end('down');
      if (path.startsWith('/flaky')) return res.writeHead(flakyUp ? 200 : 503).end();
      if (path.startsWith('/refuse')) return res.writeHead(400).end('bad token');
      if (path.startsWith('/redirect')) return res.writeHead(302, { location: `${rpBase}/ok/elsewhere` }).end();
      hanging.add(res); // /slow: never answers
    });
  });
  await new Promise<void>((resolve) => rpServer.listen(0, '127.0.0.1', resolve));
  rpBase = `http://127.0.0.1:${(rpServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const res of hanging) res.destroy();
  await new Promise((resolve) => rpServer.close(resolve));
});

let aliceId: number;
let rp: Awaited<ReturnType<typeof makeApp>>;
let rpTwo: Awaited<ReturnType<typeof makeApp>>;

beforeEach(async () => {
  await resetDatabase(f.db);
  received.length = 0;
  aliceId = (await makeUser(f.db, 'alice')).user.id;
  rp = await makeApp(f.db, { name: 'RP one', scopes: 'openid', backchannelLogoutUri: `${rpBase}/ok/one` });
  rpTwo = await makeApp(f.db, { name: 'RP two', scopes: 'openid', backchannelLogoutUri: `${rpBase}/ok/two` });
});

/** Sign in a fresh browser as `username`. */
async function browser(username = 'alice'): Promise<WebClient> {
  const web = new WebClient(f.app);
  await web.signIn(username, PASSWORD);
  return web;
}

/** The ID token `app` gets for `web`'s session (authorize, consent, code exchange). */
async function idTokenFor(web: WebClient, app = rp): Promise<{ token: string; sid: string }> {
  const code = await obtainCode(web, app.clientId, { scope: 'openid' });
  const res = await f.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { ...FORM, authorization: basic(app.clientId, app.secret) },
    payload: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
  });
  expect(res.statusCode).toBe(200);
  const token = res.json().id_token as string;
  return { token, sid: JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sid };
}

const sender = (over: Partial<Parameters<typeof drainLogoutsOnce>[0]> = {}) =>
  drainLogoutsOnce({
    db: f.db,
    signingKeys: fileSigningKeySource(f.config.home, signingKeyPolicy(f.config)),
    issuer: ISSUER,
    maxAttempts: 3,
    concurrency: 2,
    retry: { baseSeconds: 0, maxSeconds: 0 },
    timeoutMs: 300,
    ...over,
  });

/** Verify a received logout token against the published JWKS, as a relying party would. */
async function verifyLogoutToken(token: string, audience: string) {
  const jwks = createLocalJWKSet((await f.app.inject({ url: '/oauth/discovery/keys' })).json());
  const { payload, protectedHeader } = await jwtVerify(token, jwks, {
    issuer: ISSUER,
    audience,
    typ: 'logout+jwt',
    algorithms: ['RS256'],
  });
  return { payload, protectedHeader };
}

const queued = () =>
  f.db
    .selectFrom('backchannel_logout_deliveries')
    .select(['client_id', 'sid', 'sub', 'reason', 'status'])
    .orderBy('id')
    .execute();

/** The claims of every logout token POSTed to paths starting with `prefix`, in order. */
const decodeReceived = async (prefix: string) =>
  received
    .filter((r) => r.path.startsWith(prefix))
    .map((r) => JSON.parse(Buffer.from(r.body.get('logout_token')!.split('.')[1], 'base64url').toString()));

describe('RP-initiated sign-out: a logout token to every other party of the session, none to others', () => {
  it('end_session with id_token_hint → the other party gets a logout token that verifies against the JWKS', async () => {
    const web = await browser();
    const first = await idTokenFor(web, rpTwo); // the party that signs out
    const second = await idTokenFor(web, rp);
    expect(second.sid).toBe(first.sid);
    // Bob's session with both parties is not alice's business.
    await makeUser(f.db, 'bob');
    const bob = await browser('bob');
    await idTokenFor(bob, rp);

    const out = await web.get(`/oauth/logout?id_token_hint=${first.token}`);
    expect(out.statusCode).toBe(200);
    const expected = (app: typeof rp) => ({
      client_id: app.clientId,
      sid: first.sid,
      sub: String(aliceId),
      reason: 'end_session',
      status: 'pending',
    });
    const pending = await queued();
    expect(pending).toHaveLength(2);
    expect(pending).toEqual(expect.arrayContaining([expected(rp), expected(rpTwo)]));
    expect(await sender()).toEqual({ claimed: 2, sent: 2, retried: 0, failed: 0 });
    expect(received.map((r) => r.path).sort()).toEqual(['/ok/one', '/ok/two']);
    const toRp = received.find((r) => r.path === '/ok/one')!;
    expect(toRp.contentType).toBe('application/x-www-form-urlencoded');
    expect([...toRp.body.keys()]).toEqual(['logout_token']);
    const { payload, protectedHeader } = await verifyLogoutToken(toRp.body.get('logout_token')!, rp.clientId);
    expect(protectedHeader).toEqual({ alg: 'RS256', kid: expect.any(String), typ: 'logout+jwt' });
    expect(payload).toEqual({
      iss: ISSUER,
      aud: rp.clientId,
      iat: expect.any(Number),
      exp: (payload.iat as number) + 120,
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
      sub: String(aliceId),
      sid: first.sid,
      events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
    });
    // Sent once: the next round has nothing.
    expect(await sender()).toEqual({ claimed: 0, sent: 0, retried: 0, failed: 0 });
    expect((await queued()).map((d) => d.status)).toEqual(['sent', 'sent']);
  });

  it('sign-out from Lanyard: only the applications that received an ID token in this session', async () => {
    const web = await browser();
    const { sid } = await idTokenFor(web, rp);
    // A code obtained but never exchanged gave no ID token; an app without openid gets none either.
    await obtainCode(web, rpTwo.clientId, { scope: 'openid' });
    const signOut = await web.get('/users/sign_out');
    const res = await web.post('/users/sign_out', { authenticity_token: WebClient.csrf(signOut.body) });
    expect(res.statusCode).toBe(302);
    expect(await queued()).toEqual([
      { client_id: rp.clientId, sid, sub: String(aliceId), reason: 'sign_out', status: 'pending' },
    ]);
  });
});

describe('every other way a session ends', () => {
  it('password change: the other sessions get logout tokens, this one (its sid kept) does not', async () => {
    const here = await browser();
    const hereSid = (await idTokenFor(here, rp)).sid;
    const there = await browser();
    const thereSid = (await idTokenFor(there, rp)).sid;
    const page = await here.get('/-/user_settings/password/edit');
    const res = await here.post('/-/user_settings/password', {
      authenticity_token: WebClient.csrf(page.body),
      'user[password]': PASSWORD,
      'user[new_password]': 'another long passphrase',
      'user[password_confirmation]': 'another long passphrase',
    });
    expect(res.statusCode).toBe(303);
    expect(await queued()).toEqual([
      { client_id: rp.clientId, sid: thereSid, sub: String(aliceId), reason: 'password', status: 'pending' },
    ]);
    // This browser is still signed in, under the same sid.
    const sessions = await f.db.selectFrom('web_sessions').select('data').where('user_id', '=', aliceId).execute();
    expect(sessions.map((s) => (s.data as { sid: string }).sid)).toEqual([hereSid]);
  });

  it('an administrator blocks the person (POST /api/v4/users/:id/block)', async () => {
    const admin = (await makeUser(f.db, 'root')).user;
    await f.db.updateTable('users').set({ is_admin: true }).where('id', '=', admin.id).execute();
    const token = await makePat(f.db, admin, ['api']);
    const { sid } = await idTokenFor(await browser(), rp);
    const res = await f.app.inject({
      method: 'POST',
      url: `/api/v4/users/${aliceId}/block`,
      headers: { 'private-token': token },
    });
    expect(res.statusCode).toBe(201);
    expect(await queued()).toEqual([
      { client_id: rp.clientId, sid, sub: String(aliceId), reason: 'blocked', status: 'pending' },
    ]);
    expect(await sender()).toMatchObject({ sent: 1 });
    const { payload } = await verifyLogoutToken(received[0].body.get('logout_token')!, rp.clientId);
    expect(payload).toMatchObject({ sid, sub: String(aliceId) });
  });

  it('a session revoked from the active-sessions page (confirm, CSRF, redirect)', async () => {
    const here = await browser();
    const there = await browser();
    const { sid } = await idTokenFor(there, rp);
    await idTokenFor(here, rp);
    const list = await here.get('/-/user_settings/active_sessions');
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain(`href="/-/user_settings/active_sessions/${sid}/revoke"`);
    const confirm = await here.get(`/-/user_settings/active_sessions/${sid}/revoke`);
    expect(confirm.statusCode).toBe(200);
    // Without the CSRF token: refused, nothing ended.
    const forged = await here.post(`/-/user_settings/active_sessions/${sid}/revoke`, {});
    expect(forged.statusCode).toBe(422);
    expect(await queued()).toEqual([]);
    const res = await here.post(`/-/user_settings/active_sessions/${sid}/revoke`, {
      authenticity_token: WebClient.csrf(confirm.body),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/-/user_settings/active_sessions');
    expect(await queued()).toEqual([
      { client_id: rp.clientId, sid, sub: String(aliceId), reason: 'revoked', status: 'pending' },
    ]);
    // The revoked browser is signed out.
    expect((await there.get('/-/user_settings/active_sessions')).headers.location).toBe('/users/sign_in');
  });

  it('the retention job ending an expired session', async () => {
    const { sid } = await idTokenFor(await browser(), rp);
    await f.db
      .updateTable('web_sessions')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .execute();
    const report = await pruneExpiredData(f.db);
    expect(report.deleted.web_sessions).toBe(1);
    expect(await queued()).toEqual([
      { client_id: rp.clientId, sid, sub: String(aliceId), reason: 'expired', status: 'pending' },
    ]);
  });
});

describe('a failing back-channel endpoint: retried, then given up and listed; never in the way', () => {
  it('5xx, a redirect (not followed) and a timeout are retried up to the limit; a 400 fails at once', async () => {
    const web = await browser();
    const apps = [];
    for (const path of ['fail', 'redirect', 'slow', 'refuse']) {
      const app = await makeApp(f.db, {
        name: `RP ${path}`,
        scopes: 'openid',
        backchannelLogoutUri: `${rpBase}/${path}`,
      });
      await idTokenFor(web, app);
      apps.push(app);
    }
    // The person's sign-out does not wait for any of them.
    const signOut = await web.get('/users/sign_out');
    const res = await web.post('/users/sign_out', { authenticity_token: WebClient.csrf(signOut.body) });
    expect(res.statusCode).toBe(302);
    expect(received).toEqual([]);

    const rounds: LogoutRoundReport[] = [];
    for (let i = 0; i < 4; i++) rounds.push(await sender({ concurrency: 4 }));
    expect(rounds).toEqual([
      { claimed: 4, sent: 0, retried: 3, failed: 1 },
      { claimed: 3, sent: 0, retried: 3, failed: 0 },
      { claimed: 3, sent: 0, retried: 0, failed: 3 },
      { claimed: 0, sent: 0, retried: 0, failed: 0 },
    ]);
    // The redirect's target never saw a POST.
    expect(received.filter((r) => r.path === '/ok/elsewhere')).toEqual([]);
    const failed = await listLogoutDeliveries(f.db, { status: 'failed' });
    expect(failed.map((d) => [d.application_name, d.attempts, d.last_error, d.response_status]).sort()).toEqual([
      ['RP fail', 3, 'HTTP 503', 503],
      ['RP redirect', 3, 'HTTP 302: redirect not followed', 302],
      ['RP refuse', 1, 'HTTP 400', 400],
      ['RP slow', 3, 'no answer within 300 ms', null],
    ]);
  });
});

describe('the operator: logout-deliveries retry', () => {
  it('a delivery given up on goes again with a fresh budget and the same jti; bad ids change nothing', async () => {
    flakyUp = false;
    const flaky = await makeApp(f.db, { name: 'RP flaky', scopes: 'openid', backchannelLogoutUri: `${rpBase}/flaky` });
    const web = await browser();
    const { sid } = await idTokenFor(web, flaky);
    const signOut = await web.get('/users/sign_out');
    await web.post('/users/sign_out', { authenticity_token: WebClient.csrf(signOut.body) });
    for (let i = 0; i < 3; i++) await sender();
    const [failed] = await listLogoutDeliveries(f.db, { status: 'failed' });
    expect([failed.application_name, failed.attempts, failed.last_error]).toEqual(['RP flaky', 3, 'HTTP 503']);
    const firstJti = (await decodeReceived('/flaky'))[0].jti;

    const usage = await runIn(f.db, ['logout-deliveries', 'retry']);
    expect([usage.code, usage.err]).toEqual([1, expect.stringContaining('give a delivery id or --failed (not both)')]);
    const notNumber = await runIn(f.db, ['logout-deliveries', 'retry', 'abc']);
    expect(notNumber.err).toContain('logout delivery id "abc" is not a number');
    const missing = await runIn(f.db, ['logout-deliveries', 'retry', String(failed.id + 1000)]);
    expect([missing.code, missing.err]).toEqual([
      1,
      expect.stringContaining(`logout delivery ${failed.id + 1000} not found`),
    ]);
    expect((await listLogoutDeliveries(f.db, { status: 'failed' })).map((d) => d.id)).toEqual([failed.id]);

    const retried = await runIn(f.db, ['logout-deliveries', 'retry', String(failed.id), '--json']);
    expect(retried.code).toBe(0);
    expect(retried.json).toMatchObject({ id: failed.id, sid, status: 'pending', attempts: 0, last_error: 'HTTP 503' });
    const audit = await f.db
      .selectFrom('audit_events')
      .select(['action', 'target_type', 'target_id', 'details'])
      .where('action', '=', 'logout_delivery.retry')
      .execute();
    expect(audit).toEqual([
      {
        action: 'logout_delivery.retry',
        target_type: 'logout_delivery',
        target_id: String(failed.id),
        details: { was: 'failed' },
      },
    ]);

    flakyUp = true;
    expect(await sender()).toEqual({ claimed: 1, sent: 1, retried: 0, failed: 0 });
    const tokens = await decodeReceived('/flaky');
    expect(tokens).toHaveLength(4);
    expect(tokens.every((t) => t.jti === firstJti && t.sid === sid)).toBe(true);
    const sent = await runIn(f.db, ['logout-deliveries', 'retry', String(failed.id)]);
    expect([sent.code, sent.err]).toEqual([
      1,
      expect.stringMatching(/logout delivery \d+ was already sent \(\d{4}-.*Z\)/),
    ]);
    const none = await runIn(f.db, ['logout-deliveries', 'retry', '--failed', '--json']);
    expect(none.json).toEqual({ retried: 0 });
  });

  it('--failed queues every failed delivery again, and says how many', async () => {
    flakyUp = false;
    const web = await browser();
    for (const name of ['RP a', 'RP b']) {
      await idTokenFor(
        web,
        await makeApp(f.db, { name, scopes: 'openid', backchannelLogoutUri: `${rpBase}/flaky/${name}` }),
      );
    }
    const signOut = await web.get('/users/sign_out');
    await web.post('/users/sign_out', { authenticity_token: WebClient.csrf(signOut.body) });
    for (let i = 0; i < 3; i++) await sender();
    expect(await listLogoutDeliveries(f.db, { status: 'failed' })).toHaveLength(2);
    const res = await runIn(f.db, ['logout-deliveries', 'retry', '--failed']);
    expect([res.code, res.out]).toEqual([
      0,
      '2 failed logout deliveries queued again; the sender sends them shortly.\n',
    ]);
    expect((await listLogoutDeliveries(f.db, { status: 'pending' })).map((d) => d.attempts)).toEqual([0, 0]);
  });
});

describe('the operator: sessions list / revoke, logout-deliveries list', () => {
  it("lists a user's sessions in 80 columns, revokes one and then all; each revoke queues logout tokens", async () => {
    const firefox = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0';
    const one = new WebClient(f.app);
    const page = await one.get('/users/sign_in', { 'user-agent': firefox });
    await one.post(
      '/users/sign_in',
      { authenticity_token: WebClient.csrf(page.body), 'user[login]': 'alice', 'user[password]': PASSWORD },
      { 'user-agent': firefox },
    );
    const first = await idTokenFor(one, rp);
    const second = await idTokenFor(await browser(), rp);

    const list = await runIn(f.db, ['sessions', 'list', 'alice', '--json']);
    expect(list.code).toBe(0);
    expect(list.json).toHaveLength(2);
    expect(list.json.find((s: { id: string }) => s.id === first.sid)).toEqual({
      id: first.sid,
      browser: 'Firefox 133',
      os: 'Windows 10/11',
      ip_address: '127.0.0.1',
      user_agent: firefox,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      last_seen_at: expect.any(String),
      expires_at: expect.any(String),
    });
    const text = await runIn(f.db, ['sessions', 'list', 'alice']);
    expect(text.out.split('\n')[0]).toMatch(/^ID\s+BROWSER\s+ADDRESS\s+LAST SEEN$/);
    expect(
      Math.max(
        ...text.out
          .trimEnd()
          .split('\n')
          .map((l) => l.length),
      ),
    ).toBeLessThanOrEqual(80);
    expect(text.out).toContain('Firefox 133,');

    const bad = await runIn(f.db, ['sessions', 'revoke', 'alice', '0'.repeat(32), '--yes']);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain(`session "${'0'.repeat(32)}" not found`);
    expect(await queued()).toEqual([]);
    const neither = await runIn(f.db, ['sessions', 'revoke', 'alice', '--yes']);
    expect(neither.code).toBe(1);

    const revoked = await runIn(f.db, ['sessions', 'revoke', 'alice', first.sid, '--yes', '--json']);
    expect(revoked.json).toEqual({ user: 'alice', revoked: 1 });
    const all = await runIn(f.db, ['sessions', 'revoke', 'alice', '--all', '--yes', '--json']);
    expect(all.json).toEqual({ user: 'alice', revoked: 1 });
    expect((await queued()).map((d) => [d.sid, d.reason])).toEqual([
      [first.sid, 'revoked'],
      [second.sid, 'revoked'],
    ]);

    await makeApp(f.db, { name: 'RP down', scopes: 'openid', backchannelLogoutUri: `${rpBase}/refuse` });
    await sender();
    const deliveries = await runIn(f.db, ['logout-deliveries', 'list', '--json']);
    expect(deliveries.json.map((d: { status: string; reason: string }) => [d.status, d.reason])).toEqual([
      ['sent', 'revoked'],
      ['sent', 'revoked'],
    ]);
    const table = await runIn(f.db, ['logout-deliveries', 'list']);
    expect(table.out.split('\n')[0]).toMatch(/^ID\s+STATUS\s+TRIES\s+APPLICATION\s+REASON\s+LAST ERROR$/);
    expect(
      Math.max(
        ...table.out
          .trimEnd()
          .split('\n')
          .map((l) => l.length),
      ),
    ).toBeLessThanOrEqual(80);
    const badStatus = await runIn(f.db, ['logout-deliveries', 'list', '--status', 'lost']);
    expect(badStatus.code).toBe(1);
    expect(badStatus.err).toContain('status must be one of pending, sending, sent, failed (got "lost")');
  });
});

describe('the active-sessions page', () => {
  it('revoke all others keeps this session; own or unknown ids are 404s that end nothing', async () => {
    const here = await browser();
    const hereSid = (await idTokenFor(here, rp)).sid;
    const a = await idTokenFor(await browser(), rp);
    const b = await idTokenFor(await browser(), rp);
    const page = await here.get('/-/user_settings/active_sessions');
    expect(page.body).not.toContain(`href="/-/user_settings/active_sessions/${hereSid}/revoke"`);
    expect(page.body).toContain('<span class="badge">This session</span>');

    for (const id of [hereSid, 'f'.repeat(32)]) {
      expect((await here.get(`/-/user_settings/active_sessions/${id}/revoke`)).statusCode).toBe(404);
      const res = await here.post(`/-/user_settings/active_sessions/${id}/revoke`, {
        authenticity_token: WebClient.csrf(page.body),
      });
      expect(res.statusCode).toBe(404);
    }
    expect((await here.get('/-/user_settings/active_sessions/not-hex/revoke')).statusCode).toBe(400);
    expect(await queued()).toEqual([]);

    const confirm = await here.get('/-/user_settings/active_sessions/revoke_others');
    expect(confirm.statusCode).toBe(200);
    const res = await here.post('/-/user_settings/active_sessions/revoke_others', {
      authenticity_token: WebClient.csrf(confirm.body),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/-/user_settings/active_sessions');
    const after = await here.get('/-/user_settings/active_sessions');
    expect(after.body).toContain('Revoked 2 other sessions.');
    expect((await queued()).map((d) => d.sid).sort()).toEqual([a.sid, b.sid].sort());
    const left = await f.db.selectFrom('web_sessions').select('data').execute();
    expect(left.map((s) => (s.data as { sid: string }).sid)).toEqual([hereSid]);
  });

  it('last seen: written when older than five minutes, not on every request', async () => {
    const web = await browser();
    const lastSeen = async () =>
      (await f.db.selectFrom('web_sessions').select('last_seen_at').executeTakeFirstOrThrow()).last_seen_at;
    const long = new Date(Date.now() - 10 * 60_000);
    await f.db.updateTable('web_sessions').set({ last_seen_at: long }).execute();
    await web.get('/-/user_settings/active_sessions');
    const touched = await lastSeen();
    expect(touched.getTime()).toBeGreaterThan(Date.now() - 60_000);
    const recent = new Date(Date.now() - 60_000);
    await f.db.updateTable('web_sessions').set({ last_seen_at: recent }).execute();
    await web.get('/-/user_settings/active_sessions');
    expect((await lastSeen()).getTime()).toBe(recent.getTime());
  });
});
