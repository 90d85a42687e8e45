// GET/POST /oauth/authorize: the error page, error redirects, PKCE rules, sign-in round trip,
// consent (Authorize/Deny), trusted applications, clickjacking headers and CSRF.
import { beforeEach, describe, expect, it } from 'vitest';
import { resetDatabase } from '../support/db';
import { authorizeUrl, consentFields, WebClient } from './support/browser-like';
import { DESCRIPTIONS, type ErrorCode } from './support/contract';
import { makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const f = useFixture();
let c: Awaited<ReturnType<typeof makeApp>>;
let pub: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;

beforeEach(async () => {
  await resetDatabase(f.db);
  await makeUser(f.db, 'alice');
  c = await makeApp(f.db, {
    name: 'Confidential <App> & "Co"',
    redirectUris: [REDIRECT_URI, 'http://127.0.0.1:8000/cb'],
    scopes: 'api read_user',
  });
  pub = await makeApp(f.db, { name: 'Public', confidential: false });
  web = new WebClient(f.app);
});

const expectRedirectError = (
  res: { statusCode: number; headers: Record<string, unknown> },
  error: ErrorCode,
  state?: string,
  base = REDIRECT_URI,
) => {
  expect(res.statusCode).toBe(302);
  const q = new URLSearchParams({ error, error_description: DESCRIPTIONS[error] });
  if (state !== undefined) q.set('state', state);
  // RFC 9207: the issuer on every authorization response (the test app's public URL).
  q.set('iss', 'http://127.0.0.1:3000');
  expect(res.headers.location).toBe(`${base}?${q}`);
};

// Doorkeeper's error page: the error code and its description (doorkeeper.errors.messages).
type PageError = 'invalid_client' | 'invalid_redirect_uri';
const PAGE_DESCRIPTIONS: Record<PageError, string> = {
  invalid_client: DESCRIPTIONS.invalid_client,
  invalid_redirect_uri: 'The redirect uri included is not valid.',
};
const PAGE_TITLES: Record<PageError, string> = {
  invalid_client: 'Unknown application',
  invalid_redirect_uri: 'This application cannot send you back',
};
function expectErrorPage(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  error: PageError = 'invalid_redirect_uri',
) {
  expect(res.statusCode).toBe(400);
  expect(res.headers.location).toBeUndefined();
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  // Words first (the title says what happened), the code second.
  expect(res.body).toContain(`<h1>${PAGE_TITLES[error]}</h1>`);
  expect(res.body.indexOf('id="error-message"')).toBeLessThan(res.body.indexOf('id="error-code"'));
  expect(res.body).toContain(`<strong id="error-code">${error}</strong>`);
  expect(res.body).toContain(`<p id="error-description">${PAGE_DESCRIPTIONS[error]}</p>`);
}

describe('client and redirect URI are checked first: an HTML error page, never a redirect', () => {
  const cases: Array<[string, (id: string) => string, PageError?]> = [
    ['unknown client_id', () => authorizeUrl('f'.repeat(64), { state: 's' }), 'invalid_client'],
    [
      'missing client_id',
      () => `/oauth/authorize?redirect_uri=${encodeURIComponent(REDIRECT_URI)}&response_type=code`,
      'invalid_client',
    ],
    ['missing redirect_uri', (id) => `/oauth/authorize?client_id=${id}&response_type=code&state=s`],
    [
      'unregistered redirect_uri',
      (id) => authorizeUrl(id, { redirectUri: 'https://evil.example/callback', state: 's' }),
    ],
    ['registered URI plus a path', (id) => authorizeUrl(id, { redirectUri: `${REDIRECT_URI}/x` })],
    ['a fragment', (id) => authorizeUrl(id, { redirectUri: `${REDIRECT_URI}#x` })],
    [
      'bad response_type with a bad redirect_uri',
      (id) =>
        authorizeUrl(id, { redirectUri: 'https://evil.example/' }).replace('response_type=code', 'response_type=token'),
    ],
  ];
  for (const [name, url, error = 'invalid_redirect_uri'] of cases) {
    it(`${name} (signed out and signed in)`, async () => {
      for (const signedIn of [false, true]) {
        if (signedIn) await web.signIn('alice', PASSWORD);
        expectErrorPage(await web.get(url(c.clientId)), error);
      }
    });
  }

  it('loopback redirect URIs may differ in port only (RFC 8252 §7.3)', async () => {
    await web.signIn('alice', PASSWORD);
    expect((await web.get(authorizeUrl(c.clientId, { redirectUri: 'http://127.0.0.1:51234/cb' }))).statusCode).toBe(
      200,
    );
    expectErrorPage(await web.get(authorizeUrl(c.clientId, { redirectUri: 'http://127.0.0.1:51234/other' })));
    expectErrorPage(await web.get(authorizeUrl(c.clientId, { redirectUri: 'http://localhost:8000/cb' })));
  });
});

describe('other errors redirect back with error, error_description and state', () => {
  it('unsupported_response_type (implicit grant), missing response_type', async () => {
    expectRedirectError(
      await web.get(authorizeUrl(c.clientId, { state: 'st 1' }).replace('response_type=code', 'response_type=token')),
      'unsupported_response_type',
      'st 1',
    );
    expectRedirectError(
      await web.get(authorizeUrl(c.clientId, { state: 'st' }).replace('&response_type=code', '')),
      'invalid_request',
      'st',
    );
  });

  it('invalid_scope: unknown scope or wider than the application', async () => {
    expectRedirectError(await web.get(authorizeUrl(c.clientId, { scope: 'sudo', state: 'a' })), 'invalid_scope', 'a');
    expectRedirectError(
      await web.get(authorizeUrl(c.clientId, { scope: 'read_api', state: 'a' })),
      'invalid_scope',
      'a',
    );
  });

  it('PKCE: a challenge without a method, an unknown method, a method without challenge, a malformed challenge', async () => {
    const ch = 'a'.repeat(43);
    expectRedirectError(
      await web.get(authorizeUrl(c.clientId, { codeChallenge: ch, state: 'p' })),
      'invalid_request',
      'p',
    );
    expectRedirectError(
      await web.get(authorizeUrl(c.clientId, { codeChallenge: ch, codeChallengeMethod: 'S512', state: 'p' })),
      'invalid_request',
      'p',
    );
    expectRedirectError(
      await web.get(authorizeUrl(c.clientId, { codeChallengeMethod: 'S256', state: 'p' })),
      'invalid_request',
      'p',
    );
    expectRedirectError(
      await web.get(authorizeUrl(c.clientId, { codeChallenge: 'short', codeChallengeMethod: 'plain', state: 'p' })),
      'invalid_request',
      'p',
    );
  });

  it('a public application without code_challenge: invalid_request', async () => {
    expectRedirectError(await web.get(authorizeUrl(pub.clientId, { state: 'x' })), 'invalid_request', 'x');
  });

  it("keeps the redirect URI's own query and omits state when none was sent", async () => {
    const app2 = await makeApp(f.db, { redirectUris: ['https://client.example/cb?tenant=1'] });
    const res = await web.get(
      authorizeUrl(app2.clientId, { redirectUri: 'https://client.example/cb?tenant=1', scope: 'nope' }),
    );
    expect(res.headers.location).toBe(
      `https://client.example/cb?tenant=1&${new URLSearchParams({ error: 'invalid_scope', error_description: DESCRIPTIONS.invalid_scope, iss: 'http://127.0.0.1:3000' })}`,
    );
  });
});

describe('sign-in round trip and consent', () => {
  it('signed out → 302 /users/sign_in → back to this exact URL after sign-in', async () => {
    const url = authorizeUrl(c.clientId, { state: 'round trip', scope: 'read_user' });
    const first = await web.get(url);
    expect(first.statusCode).toBe(302);
    expect(first.headers.location).toBe('/users/sign_in');
    const signIn = await web.signIn('alice', PASSWORD);
    expect(signIn.statusCode).toBe(302);
    expect(signIn.headers.location).toBe(url);
  });

  it('consent page: app name (escaped), scopes in words, Authorize/Deny, CSP frame-ancestors and X-Frame-Options', async () => {
    await web.signIn('alice', PASSWORD);
    const res = await web.get(authorizeUrl(c.clientId, { state: 's' }));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain(
      '<strong>Confidential &lt;App&gt; &amp; &quot;Co&quot;</strong> is requesting access to your account',
    );
    expect(res.body).toContain('<p id="application-owner" class="muted">Registered by the administrator</p>');
    expect(res.body).toContain(
      '<ul id="scopes" class="scope-list"><li data-scope="api">Read and change everything your account can reach, including all your groups and projects</li><li data-scope="read_user">Read your profile: your name, username and e-mail addresses</li></ul>',
    );
    expect(res.body).toContain('<p id="redirect-host">You will be sent back to <strong>client.example</strong>.</p>');
    expect(res.body).toContain('<p class="trust-warning" id="trust-warning">Only allow applications you trust.</p>');
    expect(res.body).toContain(
      '<div class="actions consent-actions"><button type="submit" class="button primary" name="decision" value="authorize">Authorize</button><button type="submit" class="button" name="decision" value="deny">Deny</button></div>',
    );
    expect(res.body).not.toContain('GitLab');
  });

  it('names the person who registered the application, and the loopback host and port it returns to', async () => {
    const owner = await makeUser(f.db, 'grace');
    await f.db.updateTable('users').set({ name: 'Grace <Hopper>' }).where('id', '=', owner.user.id).execute();
    const owned = await makeApp(f.db, {
      name: 'Owned',
      redirectUris: ['http://127.0.0.1:8000/cb'],
      ownerId: owner.user.id,
    });
    await web.signIn('alice', PASSWORD);
    const res = await web.get(authorizeUrl(owned.clientId, { redirectUri: 'http://127.0.0.1:8000/cb' }));
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(
      '<p id="application-owner" class="muted">Registered by Grace &lt;Hopper&gt; (@grace)</p>',
    );
    expect(res.body).toContain('You will be sent back to <strong>127.0.0.1:8000</strong>.');
  });

  it('"Not you? Sign out" ends the session and the next sign-in returns to this authorization request', async () => {
    await makeUser(f.db, 'bob');
    await web.signIn('alice', PASSWORD);
    const url = authorizeUrl(c.clientId, { state: 'not-you' });
    const page = await web.get(url);
    const notYou = /<form method="post" action="\/users\/sign_out" class="not-you">[\s\S]*?<\/form>/.exec(
      page.body,
    )?.[0];
    expect(notYou).toContain(`<input type="hidden" name="return_to" value="${url.replace(/&/g, '&amp;')}">`);
    expect(notYou).toContain('Not you? <button type="submit" class="link-button">Sign out</button>');
    const out = await web.post('/users/sign_out', { authenticity_token: WebClient.csrf(page.body), return_to: url });
    expect(out.statusCode).toBe(302);
    expect(out.headers.location).toBe('/users/sign_in');
    expect((await web.get(url)).headers.location).toBe('/users/sign_in');
    const signedIn = await web.signIn('bob', PASSWORD);
    expect(signedIn.statusCode).toBe(302);
    expect(signedIn.headers.location).toBe(url);
    expect((await web.get(url)).body).toContain('Signed in as <strong id="signed-in-user">bob</strong>');
  });

  it('sign-out ignores a return_to that is not our own path (no open redirect)', async () => {
    for (const returnTo of ['https://evil.example/', '//evil.example/x', '/\\evil.example']) {
      const other = new WebClient(f.app);
      await other.signIn('alice', PASSWORD);
      const page = await other.get('/users/sign_out');
      const out = await other.post('/users/sign_out', {
        authenticity_token: WebClient.csrf(page.body),
        return_to: returnTo,
      });
      expect(out.headers.location).toBe('/users/sign_in');
      const again = await other.signIn('alice', PASSWORD);
      expect(again.headers.location).toMatch(/^\/[^/\\]/);
      expect(again.headers.location).not.toContain('evil');
    }
  });

  it('Authorize → {redirect_uri}?code=…&state=…; Deny → access_denied with state', async () => {
    await web.signIn('alice', PASSWORD);
    const page = await web.get(authorizeUrl(c.clientId, { state: 'é&=x' }));
    const ok = await web.post('/oauth/authorize', { ...consentFields(page.body), decision: 'authorize' });
    expect(ok.statusCode).toBe(302);
    expect(ok.headers.location).toMatch(
      new RegExp(`^${REDIRECT_URI}\\?code=[0-9a-f]{64}&state=%C3%A9%26%3Dx&iss=http%3A%2F%2F127.0.0.1%3A3000$`),
    );
    const deny = await web.post('/oauth/authorize', { ...consentFields(page.body), decision: 'deny' });
    expectRedirectError(deny, 'access_denied', 'é&=x');
  });

  it('the consent form is re-validated on post (a tampered scope is refused)', async () => {
    await web.signIn('alice', PASSWORD);
    const page = await web.get(authorizeUrl(c.clientId, { state: 's' }));
    const res = await web.post('/oauth/authorize', {
      ...consentFields(page.body),
      scope: 'api read_api',
      decision: 'authorize',
    });
    expectRedirectError(res, 'invalid_scope', 's');
  });

  it('a post without a valid CSRF token is refused (422), with no code issued', async () => {
    await web.signIn('alice', PASSWORD);
    const page = await web.get(authorizeUrl(c.clientId, { state: 's' }));
    const fields = consentFields(page.body);
    for (const token of [
      undefined,
      '',
      'A'.repeat(43),
      fields.authenticity_token.slice(0, -1) + (fields.authenticity_token.endsWith('A') ? 'B' : 'A'),
    ]) {
      const res = await web.post('/oauth/authorize', { ...fields, authenticity_token: token, decision: 'authorize' });
      expect(res.statusCode).toBe(422);
      expect(res.headers.location).toBeUndefined();
    }
    // Another session's token does not work either.
    const other = new WebClient(f.app);
    await other.signIn('alice', PASSWORD);
    expect((await other.post('/oauth/authorize', { ...fields, decision: 'authorize' })).statusCode).toBe(422);
    expect(await f.db.selectFrom('oauth_authorization_codes').select('id').execute()).toEqual([]);
  });

  it('trusted applications skip the consent page', async () => {
    const trusted = await makeApp(f.db, { name: 'Trusted', trusted: true });
    await web.signIn('alice', PASSWORD);
    const res = await web.get(authorizeUrl(trusted.clientId, { state: 't' }));
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toMatch(
      new RegExp(`^${REDIRECT_URI}\\?code=[0-9a-f]{64}&state=t&iss=http%3A%2F%2F127.0.0.1%3A3000$`),
    );
  });

  it('a confidential application the user already approved skips the consent page (contract §2)', async () => {
    await web.signIn('alice', PASSWORD);
    const first = await web.get(authorizeUrl(c.clientId, { state: 'one' }));
    expect(first.statusCode).toBe(200);
    const approved = await web.post('/oauth/authorize', { ...consentFields(first.body), decision: 'authorize' });
    const code = new URL(approved.headers.location as string).searchParams.get('code')!;
    const token = await f.app.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        client_id: c.clientId,
        client_secret: c.secret,
      },
    });
    expect(token.statusCode).toBe(200);
    const again = await web.get(authorizeUrl(c.clientId, { state: 'two' }));
    expect(again.statusCode).toBe(302);
    expect(again.headers.location).toMatch(
      new RegExp(`^${REDIRECT_URI}\\?code=[0-9a-f]{64}&state=two&iss=http%3A%2F%2F127.0.0.1%3A3000$`),
    );
  });

  it('the code carries the granted scopes, redirect URI and PKCE challenge', async () => {
    await web.signIn('alice', PASSWORD);
    const page = await web.get(
      authorizeUrl(c.clientId, { scope: 'read_user', codeChallenge: 'b'.repeat(43), codeChallengeMethod: 'plain' }),
    );
    await web.post('/oauth/authorize', { ...consentFields(page.body), decision: 'authorize' });
    const row = await f.db
      .selectFrom('oauth_authorization_codes')
      .select(['scopes', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'expires_at'])
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      scopes: ['read_user'],
      redirect_uri: REDIRECT_URI,
      code_challenge: 'b'.repeat(43),
      code_challenge_method: 'plain',
    });
    expect(Math.round((row.expires_at.getTime() - Date.now()) / 1000)).toBeGreaterThan(595);
  });
});
