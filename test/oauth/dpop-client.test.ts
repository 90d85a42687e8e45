// oauth4webapi's DPoP support (RFC 9449) against the real server over HTTP: a public client with
// PKCE signs a person in through the real pages, gets a DPoP-bound token (dpop_jkt at authorize,
// §10), refreshes it with the same key, uses it at /api/v4 and userinfo; the bound token is refused
// as a bearer token, a replayed proof is refused, another key cannot refresh, and an application
// that requires DPoP answers use_dpop_nonce first, which the library retries with the nonce.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrfOf, HttpSession, hiddenFields } from './support/http-session';
import { makeApp, makeUser, PASSWORD, useFixture } from './support/harness';

type O = typeof import('oauth4webapi');
let oauth: O;
const f = useFixture();
let base: string;
let as: Awaited<ReturnType<O['processDiscoveryResponse']>>;
const CALLBACK = 'http://127.0.0.1:8976/callback';
const opts = (DPoP?: ReturnType<O['DPoP']>) => ({ [oauth.allowInsecureRequests]: true, DPoP }) as const;

beforeAll(async () => {
  oauth = await import('oauth4webapi');
  await f.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(f.app.server.address() as AddressInfo).port}`;
  f.config.publicUrl = base;
  const issuer = new URL(base);
  as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
  );
});
afterAll(() => f.app.close());

/** The person's part: sign in through the real pages and authorize on the consent page. */
async function signInAndAuthorize(url: URL, login: string): Promise<URL> {
  const browser = new HttpSession(base);
  expect((await browser.request(url.pathname + url.search)).status).toBe(302);
  const signInPage = await browser.request('/users/sign_in');
  const signedIn = await browser.request('/users/sign_in', {
    form: { authenticity_token: csrfOf(signInPage.body), 'user[login]': login, 'user[password]': PASSWORD },
  });
  expect(signedIn.location).toBe(url.pathname + url.search);
  const consent = await browser.request(signedIn.location!);
  expect(consent.status).toBe(200);
  const back = await browser.request('/oauth/authorize', {
    form: { ...hiddenFields(consent.body), decision: 'authorize' },
  });
  expect(back.status).toBe(302);
  return new URL(back.location!);
}

/** A public client's code flow with PKCE and DPoP; returns the token response and the handle. */
async function codeFlow(clientId: string, login: string, DPoP: ReturnType<O['DPoP']>, retryNonce = false) {
  const client = { client_id: clientId, token_endpoint_auth_method: 'none' };
  const verifier = oauth.generateRandomCodeVerifier();
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: clientId,
    redirect_uri: CALLBACK,
    response_type: 'code',
    state: 's',
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    dpop_jkt: await DPoP.calculateThumbprint(),
  }).toString();
  const params = oauth.validateAuthResponse(as, client, await signInAndAuthorize(url, login), 's');
  const exchange = async () =>
    oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, CALLBACK, verifier, opts(DPoP)),
    );
  let nonceChallenged = false;
  let tokens: Awaited<ReturnType<typeof exchange>>;
  try {
    tokens = await exchange();
  } catch (err) {
    if (!retryNonce || !oauth.isDPoPNonceError(err)) throw err;
    nonceChallenged = true;
    tokens = await exchange();
  }
  return { client, tokens, nonceChallenged };
}

describe('oauth4webapi with DPoP', () => {
  it('a DPoP-bound code flow and refresh (public client, PKCE, dpop_jkt); the token is useless without the key', async () => {
    await makeUser(f.db, 'alice');
    const { clientId } = await makeApp(f.db, {
      name: 'CLI',
      redirectUris: ['http://127.0.0.1/callback'],
      confidential: false,
      scopes: 'read_user openid',
    });
    const keyPair = await oauth.generateKeyPair('ES256');
    const DPoP = oauth.DPoP({}, keyPair);
    const { client, tokens } = await codeFlow(clientId, 'alice', DPoP);
    expect(tokens.token_type).toBe('dpop');
    const api = await oauth.protectedResourceRequest(
      tokens.access_token,
      'GET',
      new URL(`${base}/api/v4/user`),
      undefined,
      undefined,
      opts(DPoP),
    );
    expect(api.status).toBe(200);
    expect(((await api.json()) as { username: string }).username).toBe('alice');
    const userinfo = await oauth.processUserInfoResponse(
      as,
      client,
      oauth.skipSubjectCheck,
      await oauth.userInfoRequest(as, client, tokens.access_token, opts(DPoP)),
    );
    expect(userinfo.sub).toBeDefined();

    // Stolen without the key: as a bearer token it is refused.
    const stolen = await fetch(`${base}/api/v4/user`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(stolen.status).toBe(401);
    expect(await stolen.json()).toEqual({
      error: 'invalid_token',
      error_description: 'DPoP-bound access token requires the DPoP scheme',
    });

    // A proof replayed (captured from a request and sent again) is refused.
    let captured: string | undefined;
    await oauth.protectedResourceRequest(
      tokens.access_token,
      'GET',
      new URL(`${base}/api/v4/user`),
      undefined,
      undefined,
      {
        ...opts(DPoP),
        [oauth.customFetch]: (url, init) => {
          captured = new Headers(init.headers).get('dpop') ?? undefined;
          return fetch(url, init);
        },
      },
    );
    const replay = await fetch(`${base}/api/v4/user`, {
      headers: { authorization: `DPoP ${tokens.access_token}`, dpop: captured! },
    });
    expect(replay.status).toBe(401);
    expect(replay.headers.get('www-authenticate')).toMatch(
      /^DPoP error="invalid_dpop_proof", error_description="DPoP proof replayed"/,
    );

    // The public client's refresh token is bound too: another key cannot refresh it…
    const thief = oauth.DPoP({}, await oauth.generateKeyPair('ES256'));
    await expect(
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts(thief)),
      ),
    ).rejects.toMatchObject({ error: 'invalid_grant', status: 400 });
    // …nor can a request without a proof…
    await expect(
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts()),
      ),
    ).rejects.toMatchObject({ error: 'invalid_grant', status: 400 });
    // …while the key holder can, and gets a token bound to the same key.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts(DPoP)),
    );
    expect(refreshed.token_type).toBe('dpop');
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const again = await oauth.protectedResourceRequest(
      refreshed.access_token,
      'GET',
      new URL(`${base}/oauth/token/info`),
      undefined,
      undefined,
      opts(DPoP),
    );
    expect(again.status).toBe(200);
  });

  it('a code issued for one dpop_jkt cannot be exchanged with another key', async () => {
    await makeUser(f.db, 'bob');
    const { clientId } = await makeApp(f.db, {
      name: 'Other',
      redirectUris: ['http://127.0.0.1/callback'],
      confidential: false,
      scopes: 'read_user',
    });
    const DPoP = oauth.DPoP({}, await oauth.generateKeyPair('ES256'));
    const client = { client_id: clientId, token_endpoint_auth_method: 'none' };
    const verifier = oauth.generateRandomCodeVerifier();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      state: 's',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      dpop_jkt: await DPoP.calculateThumbprint(),
    }).toString();
    const params = oauth.validateAuthResponse(as, client, await signInAndAuthorize(url, 'bob'), 's');
    const other = oauth.DPoP({}, await oauth.generateKeyPair('ES256'));
    await expect(
      oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, CALLBACK, verifier, opts(other)),
      ),
    ).rejects.toMatchObject({ error: 'invalid_grant', status: 400 });
  });

  it('an application that requires DPoP: use_dpop_nonce with a DPoP-Nonce, then the retry succeeds', async () => {
    await makeUser(f.db, 'carol');
    const { clientId } = await makeApp(f.db, {
      name: 'Strict',
      redirectUris: ['http://127.0.0.1/callback'],
      confidential: false,
      scopes: 'read_user',
      dpopBoundAccessTokens: true,
    });
    // Without a proof: refused before anything is spent.
    const raw = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'x', client_id: clientId }),
    });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toEqual({ error: 'invalid_dpop_proof', error_description: 'DPoP proof required' });

    const DPoP = oauth.DPoP({}, await oauth.generateKeyPair('ES256'));
    const { tokens, nonceChallenged } = await codeFlow(clientId, 'carol', DPoP, true);
    expect(nonceChallenged).toBe(true);
    expect(tokens.token_type).toBe('dpop');
  });
});
