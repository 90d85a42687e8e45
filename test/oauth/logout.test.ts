// RP-Initiated Logout 1.0 at /oauth/logout through the real app on real PostgreSQL: openid-client
// builds the end-session URL from our discovery document; ID token hints are verified against our
// keys (expired ones accepted, foreign, tampered or another client's refused); a request without a
// hint for this session asks first (CSRF-protected); bad input is an error page that changes nothing.
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import * as client from 'openid-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resetDatabase } from '../support/db';
import { consentFields, obtainCode, WebClient } from './support/browser-like';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const ISSUER = 'https://lanyard.example.com';
const f = useFixture({ config: { publicUrl: ISSUER } });
const LOGGED_OUT = 'https://client.example/logged-out';
let rp: Awaited<ReturnType<typeof makeApp>>;
let other: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;
let aliceId: number;

beforeEach(async () => {
  await resetDatabase(f.db);
  aliceId = (await makeUser(f.db, 'alice')).user.id;
  await makeUser(f.db, 'bob');
  rp = await makeApp(f.db, { name: 'Relying <Party>', scopes: 'openid', postLogoutRedirectUris: [LOGGED_OUT] });
  other = await makeApp(f.db, { name: 'Other', scopes: 'openid', postLogoutRedirectUris: [`${LOGGED_OUT}/other`] });
  web = new WebClient(f.app);
  await web.signIn('alice', PASSWORD);
});
afterEach(() => vi.useRealTimers());

async function idTokenFor(browser: WebClient, app = rp): Promise<string> {
  const code = await obtainCode(browser, app.clientId, { scope: 'openid' });
  const res = await f.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { ...FORM, authorization: basic(app.clientId, app.secret) },
    payload: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
  });
  expect(res.statusCode).toBe(200);
  return res.json().id_token;
}

/** openid-client's end-session URL, from our discovery document. */
async function endSessionUrl(params: Record<string, string>, app = rp): Promise<string> {
  const metadata = (await f.app.inject({ url: '/.well-known/openid-configuration' })).json();
  const config = new client.Configuration(metadata, app.clientId, app.secret);
  const url = client.buildEndSessionUrl(config, params);
  expect(url.origin + url.pathname).toBe(`${ISSUER}/oauth/logout`);
  return url.pathname + url.search;
}

const sessionsOfAlice = async () =>
  (await f.db.selectFrom('web_sessions').select('id_digest').where('user_id', '=', aliceId).execute()).length;

function expectErrorPage(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  error: string,
  description: string,
) {
  expect(res.statusCode).toBe(400);
  expect(res.headers.location).toBeUndefined();
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers['set-cookie']).toBeUndefined();
  expect(res.body).toContain(`<strong id="error-code">${error}</strong>`);
  expect(res.body).toContain(`<p id="error-description">${description}</p>`);
}

describe('discovery', () => {
  it('advertises end_session_endpoint', async () => {
    const doc = (await f.app.inject({ url: '/.well-known/openid-configuration' })).json();
    expect(doc.end_session_endpoint).toBe('https://lanyard.example.com/oauth/logout');
  });
});

describe('with a valid id_token_hint for this session: signs out at once', () => {
  it('openid-client URL with hint, post_logout_redirect_uri and state → session ended, back with state', async () => {
    const hint = await idTokenFor(web);
    const url = await endSessionUrl({ id_token_hint: hint, post_logout_redirect_uri: LOGGED_OUT, state: 'a b&c' });
    expect(await sessionsOfAlice()).toBe(1);
    const res = await web.get(url);
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(`${LOGGED_OUT}?state=a+b%26c`);
    expect(await sessionsOfAlice()).toBe(0);
    // The browser is signed out: authorizing again asks for a sign-in.
    const again = await web.get(
      `/oauth/authorize?client_id=${rp.clientId}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&response_type=code&scope=openid`,
    );
    expect(again.headers.location).toBe('/users/sign_in');
  });

  it('an expired hint is accepted (RP-Initiated Logout §4); the signed-out page without a redirect URI', async () => {
    // An ID token that lives one second, presented once it has expired.
    f.config.idTokenLifetimeSeconds = 1;
    const hint = await idTokenFor(web).finally(() => {
      f.config.idTokenLifetimeSeconds = 120;
    });
    const { exp } = JSON.parse(Buffer.from(hint.split('.')[1], 'base64url').toString());
    await new Promise((r) => setTimeout(r, Math.max(0, exp * 1000 - Date.now()) + 1100));
    const res = await web.get(await endSessionUrl({ id_token_hint: hint }));
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<p id="signed-out">You have signed out of Lanyard.</p>');
    expect(await sessionsOfAlice()).toBe(0);
  });

  it('POST /oauth/logout works as GET does', async () => {
    const hint = await idTokenFor(web);
    const res = await web.post('/oauth/logout', { id_token_hint: hint, post_logout_redirect_uri: LOGGED_OUT });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(LOGGED_OUT);
    expect(await sessionsOfAlice()).toBe(0);
  });
});

describe('without a hint for this session: asks first', () => {
  it('no hint → "Sign out of Lanyard?"; the confirming POST signs out and redirects with state', async () => {
    const page = await web.get(
      await endSessionUrl({ client_id: rp.clientId, post_logout_redirect_uri: LOGGED_OUT, state: 's1' }),
    );
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<title>Sign out of Lanyard?');
    expect(page.body).toContain('<strong>Relying &lt;Party&gt;</strong> asks to sign you out of Lanyard.');
    expect(await sessionsOfAlice()).toBe(1);
    const fields = consentFields(page.body);
    expect(fields).toMatchObject({ client_id: rp.clientId, post_logout_redirect_uri: LOGGED_OUT, state: 's1' });
    // No CSRF logout: without the session's token nothing happens.
    const forged = await web.post('/oauth/logout/confirm', { ...fields, authenticity_token: undefined });
    expect(forged.statusCode).toBe(422);
    expect(await sessionsOfAlice()).toBe(1);
    const done = await web.post('/oauth/logout/confirm', fields);
    expect(done.statusCode).toBe(302);
    expect(done.headers.location).toBe(`${LOGGED_OUT}?state=s1`);
    expect(await sessionsOfAlice()).toBe(0);
  });

  it("another person's hint (bob's token while alice is signed in) asks first", async () => {
    const bob = new WebClient(f.app);
    await bob.signIn('bob', PASSWORD);
    const bobsHint = await idTokenFor(bob);
    const page = await web.get(await endSessionUrl({ id_token_hint: bobsHint, post_logout_redirect_uri: LOGGED_OUT }));
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Sign out of Lanyard?');
    expect(await sessionsOfAlice()).toBe(1);
  });

  it('a hint from an earlier session of the same person (another sid) asks first', async () => {
    const earlier = new WebClient(f.app);
    await earlier.signIn('alice', PASSWORD);
    const hint = await idTokenFor(earlier);
    const page = await web.get(await endSessionUrl({ id_token_hint: hint }));
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Sign out of Lanyard?');
    expect(await sessionsOfAlice()).toBe(2);
  });

  it('nobody signed in: straight back to the registered URI, or the signed-out page', async () => {
    const anonymous = new WebClient(f.app);
    const back = await anonymous.get(
      await endSessionUrl({ client_id: rp.clientId, post_logout_redirect_uri: LOGGED_OUT, state: 'z' }),
    );
    expect(back.statusCode).toBe(302);
    expect(back.headers.location).toBe(`${LOGGED_OUT}?state=z`);
    const page = await anonymous.get('/oauth/logout');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('You have signed out of Lanyard.');
  });
});

describe('bad input: an error page, no redirect, the session untouched', () => {
  const HINT = 'The id_token_hint is not an ID token issued by this server, or it expired too long ago.';

  it('a tampered hint', async () => {
    const hint = await idTokenFor(web);
    const [h, p, s] = hint.split('.');
    const tampered = [h, p, (s[0] === 'A' ? 'B' : 'A') + s.slice(1)].join('.');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const forgedSub = [h, Buffer.from(JSON.stringify({ ...payload, sub: '999' })).toString('base64url'), s].join('.');
    for (const bad of [tampered, forgedSub, 'not-a-jwt']) {
      expectErrorPage(
        await web.get(
          `/oauth/logout?${new URLSearchParams({ id_token_hint: bad, post_logout_redirect_uri: LOGGED_OUT })}`,
        ),
        'invalid_request',
        HINT,
      );
    }
    expect(await sessionsOfAlice()).toBe(1);
  });

  it("another issuer's hint (its own key), and ours under another iss", async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const kid = (await f.app.inject({ url: '/oauth/discovery/keys' })).json().keys[0].kid;
    const claims = { sub: String(aliceId), aud: rp.clientId };
    const foreign = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(ISSUER)
      .setIssuedAt()
      .setExpirationTime('2m')
      .sign(privateKey);
    expect((await exportJWK(publicKey)).kty).toBe('RSA');
    expectErrorPage(await web.get(`/oauth/logout?id_token_hint=${foreign}`), 'invalid_request', HINT);
    expect(await sessionsOfAlice()).toBe(1);
  });

  it('a hint that expired longer ago than any session lives', async () => {
    const hint = await idTokenFor(web);
    vi.useFakeTimers({ now: Date.now() + 8 * 24 * 3600_000, toFake: ['Date'] });
    expectErrorPage(await web.get(`/oauth/logout?id_token_hint=${hint}`), 'invalid_request', HINT);
    vi.useRealTimers();
    expect(await sessionsOfAlice()).toBe(1);
  });

  it('a hint for another client than client_id', async () => {
    const hint = await idTokenFor(web);
    const url = await endSessionUrl({ id_token_hint: hint, post_logout_redirect_uri: `${LOGGED_OUT}/other` }, other);
    expectErrorPage(
      await web.get(url),
      'invalid_request',
      'The id_token_hint was issued to another client than client_id.',
    );
    expect(await sessionsOfAlice()).toBe(1);
  });

  it("an unregistered post_logout_redirect_uri, or another application's", async () => {
    const hint = await idTokenFor(web);
    const description =
      'The post_logout_redirect_uri is not one of the application&#39;s registered post-logout redirect URIs.';
    for (const uri of ['https://evil.example/', `${LOGGED_OUT}/other`, `${LOGGED_OUT}?x=1`, `${LOGGED_OUT}/`]) {
      const res = await web.get(await endSessionUrl({ id_token_hint: hint, post_logout_redirect_uri: uri }));
      expect(res.statusCode).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.body).toContain('<strong id="error-code">invalid_redirect_uri</strong>');
      expect(res.body).toContain(description);
    }
    expect(await sessionsOfAlice()).toBe(1);
  });

  it('a redirect URI without any client, an unknown client_id, a repeated parameter', async () => {
    expectErrorPage(
      await web.get(`/oauth/logout?post_logout_redirect_uri=${encodeURIComponent(LOGGED_OUT)}`),
      'invalid_request',
      'A post_logout_redirect_uri needs client_id or id_token_hint to name its application.',
    );
    const unknown = await web.get(`/oauth/logout?client_id=${'f'.repeat(64)}`);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toContain('<strong id="error-code">invalid_client</strong>');
    expectErrorPage(
      await web.get(`/oauth/logout?state=a&state=b`),
      'invalid_request',
      'A parameter was sent more than once.',
    );
    expect(await sessionsOfAlice()).toBe(1);
  });
});
