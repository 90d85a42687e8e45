// A real OAuth 2.0 client library (oauth4webapi) against a real HTTP server on real PostgreSQL:
// discovery, authorization code + PKCE, refresh, password grant, revocation, token info; client
// credentials through openid-client. Then a scan of every text column of every table for any secret
// the flows handled.
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpSession, csrfOf, hiddenFields } from './support/http-session';
import { makeApp, makeUser, PASSWORD, useFixture } from './support/harness';
import { totp } from '../support/totp';

type O = typeof import('oauth4webapi');
let oauth: O;
const f = useFixture();
let base: string;
let as: Awaited<ReturnType<O['processDiscoveryResponse']>>;
const CALLBACK = 'http://127.0.0.1:8976/callback';
/** Every secret value the flows see: none may appear in the database. */
const seen = new Set<string>();
const remember = (...values: Array<string | undefined>) =>
  values.forEach((v) => {
    if (v) seen.add(v);
  });

beforeAll(async () => {
  oauth = await import('oauth4webapi');
  await f.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(f.app.server.address() as AddressInfo).port}`;
  f.config.publicUrl = base; // the issuer is only known once listening
  const issuer = new URL(base);
  as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
  );
});
afterAll(() => f.app.close());

const opts = () => ({ [oauth.allowInsecureRequests]: true }) as const;

/** The user's part: follow the authorize URL through sign-in (and TOTP) and the consent page. */
async function userAuthorizes(
  authorizationUrl: URL,
  login: string,
  otp?: () => string,
  decision = 'authorize',
): Promise<URL> {
  const browser = new HttpSession(base);
  const first = await browser.request(authorizationUrl.pathname + authorizationUrl.search);
  expect(first).toMatchObject({ status: 302, location: '/users/sign_in' });
  const signInPage = await browser.request('/users/sign_in');
  let signedIn = await browser.request('/users/sign_in', {
    form: { authenticity_token: csrfOf(signInPage.body), 'user[login]': login, 'user[password]': PASSWORD },
  });
  if (otp) {
    // The password accepted: 303 to the sign-in page, which shows the code step.
    expect(signedIn).toMatchObject({ status: 303, location: '/users/sign_in' });
    const step = await browser.request('/users/sign_in');
    signedIn = await browser.request('/users/sign_in', {
      form: { authenticity_token: csrfOf(step.body), 'user[otp_attempt]': otp() },
    });
  }
  expect(signedIn.status).toBe(302);
  expect(signedIn.location).toBe(authorizationUrl.pathname + authorizationUrl.search);
  const consent = await browser.request(signedIn.location!);
  expect(consent.status).toBe(200);
  expect(consent.headers.get('x-frame-options')).toBe('DENY');
  const fields = hiddenFields(consent.body);
  remember(fields.authenticity_token, ...browser.cookies.values());
  const back = await browser.request('/oauth/authorize', { form: { ...fields, decision } });
  expect(back.status).toBe(302);
  return new URL(back.location!);
}

describe('oauth4webapi against the real server', () => {
  it('discovery: RFC 8414 metadata with the issuer', () => {
    expect(as.issuer).toBe(base);
    expect(as.revocation_endpoint).toBe(`${base}/oauth/revoke`);
    expect(as.code_challenge_methods_supported).toContain('S256');
  });

  it('authorization code + PKCE (confidential client, Basic), refresh, token info, revocation', async () => {
    const { user, otpSecret } = await makeUser(f.db, 'alice', { twoFactor: true });
    const registered = await makeApp(f.db, { redirectUris: [CALLBACK], scopes: 'api read_user' });
    remember(registered.secret, PASSWORD, otpSecret);
    const client = { client_id: registered.clientId };
    const auth = oauth.ClientSecretBasic(registered.secret);

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    remember(verifier);
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: 'read_user',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();

    const callback = await userAuthorizes(url, 'alice', () => totp(otpSecret!));
    const params = oauth.validateAuthResponse(as, client, callback, state);
    remember(params.get('code')!);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, auth, params, CALLBACK, verifier, opts()),
    );
    remember(tokens.access_token, tokens.refresh_token);
    expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 7200, scope: 'read_user' });
    expect(tokens.refresh_token).toMatch(/^[0-9a-f]{64}$/);

    const infoRes = await oauth.protectedResourceRequest(
      tokens.access_token,
      'GET',
      new URL(`${base}/oauth/token/info`),
      undefined,
      undefined,
      opts(),
    );
    expect(infoRes.status).toBe(200);
    expect(await infoRes.json()).toMatchObject({
      resource_owner_id: user.id,
      scope: ['read_user'],
      application: { uid: registered.clientId },
    });

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, opts()),
    );
    remember(refreshed.access_token, refreshed.refresh_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.scope).toBe('read_user');

    // The code is single-use: oauth4webapi surfaces the contract's error.
    const replay = oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, auth, params, CALLBACK, verifier, opts()),
    );
    await expect(replay).rejects.toMatchObject({ error: 'invalid_grant', status: 400 });

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, auth, refreshed.refresh_token!, opts()),
    );
    // (oauth4webapi turns the RFC 6750 WWW-Authenticate challenge into an error; read it raw.)
    await expect(
      oauth.protectedResourceRequest(
        refreshed.access_token,
        'GET',
        new URL(`${base}/oauth/token/info`),
        undefined,
        undefined,
        opts(),
      ),
    ).rejects.toMatchObject({
      name: 'WWWAuthenticateChallengeError',
    });
    const after = await fetch(`${base}/oauth/token/info`, {
      headers: { authorization: `Bearer ${refreshed.access_token}` },
    });
    expect(after.status).toBe(401);
    expect(await after.json()).toEqual({
      error: 'invalid_token',
      error_description: 'The access token is invalid',
      state: 'unauthorized',
    });
  });

  it('public client: PKCE with client_id only (None), refresh, revocation; a denied consent is an access_denied error', async () => {
    await makeUser(f.db, 'bob');
    const registered = await makeApp(f.db, {
      name: 'CLI',
      redirectUris: ['http://127.0.0.1/callback'],
      confidential: false,
      scopes: 'read_api',
    });
    const client = { client_id: registered.clientId, token_endpoint_auth_method: 'none' };
    const verifier = oauth.generateRandomCodeVerifier();
    remember(verifier, registered.secret);
    const url = new URL(as.authorization_endpoint!);
    // RFC 8252 §7.3: a loopback redirect URI with any port.
    url.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: CALLBACK,
      response_type: 'code',
      state: 's',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const callback = await userAuthorizes(url, 'bob');
    const params = oauth.validateAuthResponse(as, client, callback, 's');
    remember(params.get('code')!);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, CALLBACK, verifier, opts()),
    );
    remember(tokens.access_token, tokens.refresh_token);
    expect(tokens.scope).toBe('read_api');
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts()),
    );
    remember(refreshed.access_token, refreshed.refresh_token);
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, oauth.None(), refreshed.access_token, opts()),
    );
    expect(
      (await fetch(`${base}/oauth/token/info`, { headers: { authorization: `Bearer ${refreshed.access_token}` } }))
        .status,
    ).toBe(401);

    const denied = await userAuthorizes(url, 'bob', undefined, 'deny');
    expect(() => oauth.validateAuthResponse(as, client, denied, 's')).toThrow(
      expect.objectContaining({
        error: 'access_denied',
        error_description: 'The resource owner or authorization server denied the request.',
      }),
    );
  });

  it('password grant with client_secret_post: no refresh token; a 2FA user gets the generic invalid_grant', async () => {
    await makeUser(f.db, 'carol');
    const registered = await makeApp(f.db, { name: 'Script', redirectUris: [CALLBACK] });
    remember(registered.secret);
    const client = { client_id: registered.clientId };
    const auth = oauth.ClientSecretPost(registered.secret);
    const tokens = await oauth.processGenericTokenEndpointResponse(
      as,
      client,
      await oauth.genericTokenEndpointRequest(
        as,
        client,
        auth,
        'password',
        { username: 'carol@example.com', password: PASSWORD, scope: 'api' },
        opts(),
      ),
    );
    remember(tokens.access_token);
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'api', expires_in: 7200 });
    expect(tokens.refresh_token).toBeUndefined();
    const refused = oauth.processGenericTokenEndpointResponse(
      as,
      client,
      await oauth.genericTokenEndpointRequest(
        as,
        client,
        auth,
        'password',
        { username: 'alice', password: PASSWORD },
        opts(),
      ),
    );
    await expect(refused).rejects.toMatchObject({ error: 'invalid_grant', status: 400 });
  });

  it("client_credentials through openid-client 6 (clientCredentialsGrant): the application's own token, no refresh token, no user", async () => {
    const oidc = await import('openid-client');
    const registered = await makeApp(f.db, { name: 'Service', redirectUris: [CALLBACK], scopes: 'api notify' });
    remember(registered.secret);
    const config = await oidc.discovery(new URL(base), registered.clientId, registered.secret, undefined, {
      execute: [oidc.allowInsecureRequests],
    });
    expect(config.serverMetadata().grant_types_supported).toContain('client_credentials');
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'notify' });
    remember(tokens.access_token);
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'notify', expires_in: 7200 });
    expect(tokens.refresh_token).toBeUndefined();
    const info = await oidc.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(`${base}/oauth/token/info`),
      'GET',
    );
    expect(await info.json()).toMatchObject({ resource_owner_id: null, application: { uid: registered.clientId } });
    // A scope the application does not hold: the library surfaces the OAuth error.
    await expect(oidc.clientCredentialsGrant(config, { scope: 'read_api' })).rejects.toMatchObject({
      error: 'invalid_scope',
      status: 400,
    });
  });

  it('after all the flows, no table holds a plaintext secret, token, code, verifier, password or session id', async () => {
    // Also register an application through the web page (its secret is shown once).
    const browser = new HttpSession(base);
    const page = await browser.request('/users/sign_in');
    await browser.request('/users/sign_in', {
      form: { authenticity_token: csrfOf(page.body), 'user[login]': 'carol', 'user[password]': PASSWORD },
    });
    const apps = await browser.request('/profile/applications');
    const created = await browser.request('/profile/applications', {
      form: {
        authenticity_token: csrfOf(apps.body),
        'doorkeeper_application[name]': 'Via web',
        'doorkeeper_application[redirect_uri]': CALLBACK,
        'doorkeeper_application[scopes][]': 'api',
      },
    });
    expect(created.status).toBe(303);
    // The secret waits sealed in the session (pages/flash.ts) and is shown on the application's page.
    const shown = await browser.request(created.location!);
    remember(/id="application-secret">([^<]+)</.exec(shown.body)![1], csrfOf(apps.body), ...browser.cookies.values());
    for (const v of [...seen]) if (v.includes('.')) remember(...v.split('.')); // cookie id and signature separately

    expect(seen.size).toBeGreaterThan(20);
    const { rows: columns } = await sql<{ table_name: string; column_name: string }>`
      select table_name, column_name from information_schema.columns
      where table_schema = 'public' and table_name not like 'kysely_%'
        and data_type in ('text', 'character varying', 'ARRAY', 'jsonb', 'json')`.execute(f.db);
    expect(columns.length).toBeGreaterThan(20);
    const hits: string[] = [];
    const control: string[] = [];
    for (const { table_name, column_name } of columns) {
      const { rows } = await sql<{
        v: string;
      }>`select ${sql.ref(column_name)}::text as v from ${sql.table(table_name)}`.execute(f.db);
      for (const { v } of rows) {
        for (const secret of seen) if (v?.includes(secret)) hits.push(`${table_name}.${column_name}`);
        if (v === 'carol') control.push(`${table_name}.${column_name}`);
      }
    }
    // The TOTP seed too is sealed now (AES-256-GCM, issue 11): no secret at all in clear.
    expect(hits).toEqual([]);
    // The scan's positive control: it does see values (a username, not a secret).
    expect([...control].sort()).toEqual(['users.name', 'users.username']);
  });
});
