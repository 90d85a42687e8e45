// GET /oauth/authorize skips the consent page for a confidential application the signed-in user
// already authorized (contract §2, as on GitLab): a live grant — a token of that application and
// user, not revoked, not rotated away, expired or not — covering every requested scope.
import { createHash } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { hasLiveGrantCovering } from '../../service/domain/authorized-applications';
import { issueAccessToken } from '../../service/domain/oauth-tokens';
import { resetDatabase } from '../support/db';
import { authorizeUrl, obtainCode, WebClient } from './support/browser-like';
import { DESCRIPTIONS } from './support/contract';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const f = useFixture();
let alice: Awaited<ReturnType<typeof makeUser>>['user'];
let bob: Awaited<ReturnType<typeof makeUser>>['user'];
let c: Awaited<ReturnType<typeof makeApp>>;
let pub: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;

beforeEach(async () => {
  await resetDatabase(f.db, ['service_keys']);
  alice = (await makeUser(f.db, 'alice')).user;
  bob = (await makeUser(f.db, 'bob')).user;
  c = await makeApp(f.db, { name: 'Confidential', scopes: 'api read_user' });
  pub = await makeApp(f.db, { name: 'Public', confidential: false, scopes: 'api read_user' });
  web = new WebClient(f.app);
  expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
});

const token = (values: Record<string, string>, headers: Record<string, string> = {}) =>
  f.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...headers }, payload: form(values) });

/** Alice authorizes `c` through the consent page and the client redeems the code: a real grant. */
async function grantThroughTheFlow(scope?: string) {
  const page = await web.get(authorizeUrl(c.clientId, { scope, state: 'first' }));
  expect(page.statusCode).toBe(200);
  const code = await obtainCode(web, c.clientId, { scope });
  const res = await token(
    { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
    { authorization: basic(c.clientId, c.secret) },
  );
  expect(res.statusCode).toBe(200);
  return res.json() as { access_token: string; refresh_token: string };
}

const grant = (applicationId: number, userId: number, scopes: string[]) =>
  issueAccessToken(f.db, { applicationId, userId, scopes, withRefreshToken: true });

const SKIPPED = (state: string) =>
  new RegExp(`^${REDIRECT_URI}\\?code=[0-9a-f]{64}&state=${state}&iss=http%3A%2F%2F127.0.0.1%3A3000$`);

function expectConsentPage(res: Awaited<ReturnType<WebClient['get']>>) {
  expect(res.statusCode).toBe(200);
  expect(res.headers.location).toBeUndefined();
  expect(res.body).toContain('is requesting access to your account');
}

describe('a confidential application the user already authorized', () => {
  it('302 straight back with a code and the state; the code is redeemable', async () => {
    await grantThroughTheFlow();
    const res = await web.get(authorizeUrl(c.clientId, { state: 'again%201' }));
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toMatch(SKIPPED('again%25201'));
    const code = new URL(res.headers.location as string).searchParams.get('code')!;
    const redeemed = await token(
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
      { authorization: basic(c.clientId, c.secret) },
    );
    expect(redeemed.statusCode).toBe(200);
    expect(redeemed.json()).toMatchObject({ token_type: 'bearer', scope: 'api read_user' });
  });

  it('scopes compare as sets: another order, or the omitted scope meaning all of the app scopes, matches', async () => {
    await grantThroughTheFlow('read_user api');
    expect((await web.get(authorizeUrl(c.clientId, { scope: 'api read_user', state: 'a' }))).headers.location).toMatch(
      SKIPPED('a'),
    );
    expect((await web.get(authorizeUrl(c.clientId, { state: 'b' }))).headers.location).toMatch(SKIPPED('b'));
  });

  it('a wider request → the consent page; a narrower one is covered by the grant', async () => {
    await grantThroughTheFlow('read_user');
    expectConsentPage(await web.get(authorizeUrl(c.clientId, { scope: 'api read_user', state: 's' })));
    expectConsentPage(await web.get(authorizeUrl(c.clientId, { scope: 'api', state: 's' })));
    await grant(c.application.id, alice.id, ['api', 'read_user']);
    expect((await web.get(authorizeUrl(c.clientId, { scope: 'api', state: 'n' }))).headers.location).toMatch(
      SKIPPED('n'),
    );
  });

  it('revoking the application on the authorized-applications page brings the consent page back', async () => {
    await grantThroughTheFlow();
    const page = await web.get('/-/user_settings/authorized_applications');
    const csrf = WebClient.csrf(page.body);
    const revoked = await web.post(`/-/user_settings/authorized_applications/${c.clientId}/revoke`, {
      authenticity_token: csrf,
    });
    expect(revoked.statusCode).toBe(303);
    expectConsentPage(await web.get(authorizeUrl(c.clientId, { state: 's' })));
  });

  it('a revoked token does not count (POST /oauth/revoke)', async () => {
    const t = await grantThroughTheFlow();
    const revoked = await f.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: form({ token: t.access_token }),
    });
    expect(revoked.statusCode).toBe(200);
    expectConsentPage(await web.get(authorizeUrl(c.clientId, { state: 's' })));
  });

  it('an expired token still counts (Doorkeeper matching_token_for includes expired tokens)', async () => {
    await grantThroughTheFlow();
    await f.db
      .updateTable('oauth_access_tokens')
      .set({ expires_at: new Date(Date.now() - 60_000) })
      .execute();
    expect((await web.get(authorizeUrl(c.clientId, { state: 'e' }))).headers.location).toMatch(SKIPPED('e'));
  });

  it("after a refresh the chain's live token counts; a token rotated away (here: to narrower scopes) does not", async () => {
    const t = await grantThroughTheFlow();
    const same = await token(
      { grant_type: 'refresh_token', refresh_token: t.refresh_token },
      { authorization: basic(c.clientId, c.secret) },
    );
    expect(same.statusCode).toBe(200);
    expect((await web.get(authorizeUrl(c.clientId, { state: 'r' }))).headers.location).toMatch(SKIPPED('r'));
    const narrowed = await token(
      { grant_type: 'refresh_token', refresh_token: same.json().refresh_token, scope: 'read_user' },
      { authorization: basic(c.clientId, c.secret) },
    );
    expect(narrowed.statusCode).toBe(200);
    expectConsentPage(await web.get(authorizeUrl(c.clientId, { state: 'r' })));
    expect((await web.get(authorizeUrl(c.clientId, { scope: 'read_user', state: 'r' }))).headers.location).toMatch(
      SKIPPED('r'),
    );
  });

  it("another user's or another application's token does not count", async () => {
    const other = await makeApp(f.db, { name: 'Other', scopes: 'api read_user' });
    await grant(c.application.id, bob.id, ['api', 'read_user']);
    await grant(other.application.id, alice.id, ['api', 'read_user']);
    expectConsentPage(await web.get(authorizeUrl(c.clientId, { state: 's' })));
  });

  it('every other rule still comes first: redirect URI, scope, PKCE, sign-in', async () => {
    await grantThroughTheFlow();
    const badUri = await web.get(
      authorizeUrl(c.clientId, { redirectUri: 'https://evil.example/callback', state: 's' }),
    );
    expect(badUri.statusCode).toBe(400);
    expect(badUri.headers.location).toBeUndefined();
    expect(badUri.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(badUri.body).toContain('<strong id="error-code">invalid_redirect_uri</strong>');
    expect(badUri.body).toContain('<p id="error-description">The redirect uri included is not valid.</p>');
    const q = (error: 'invalid_scope' | 'invalid_request') =>
      `${REDIRECT_URI}?${new URLSearchParams({ error, error_description: DESCRIPTIONS[error], state: 's', iss: 'http://127.0.0.1:3000' })}`;
    expect((await web.get(authorizeUrl(c.clientId, { scope: 'api sudo', state: 's' }))).headers.location).toBe(
      q('invalid_scope'),
    );
    expect(
      (await web.get(authorizeUrl(c.clientId, { codeChallenge: 'short', codeChallengeMethod: 'plain', state: 's' })))
        .headers.location,
    ).toBe(q('invalid_request'));
    const signedOut = await new WebClient(f.app).get(authorizeUrl(c.clientId, { state: 's' }));
    expect(signedOut.statusCode).toBe(302);
    expect(signedOut.headers.location).toBe('/users/sign_in');
  });

  it('the skipped consent still binds the PKCE challenge to the code', async () => {
    await grantThroughTheFlow();
    const verifier = 'v'.repeat(43);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const res = await web.get(
      authorizeUrl(c.clientId, { codeChallenge: challenge, codeChallengeMethod: 'S256', state: 'p' }),
    );
    expect(res.headers.location).toMatch(SKIPPED('p'));
    const code = new URL(res.headers.location as string).searchParams.get('code')!;
    const auth = { authorization: basic(c.clientId, c.secret) };
    expect(
      (
        await token(
          { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: 'w'.repeat(43) },
          auth,
        )
      ).statusCode,
    ).toBe(400);
    const fresh = await web.get(
      authorizeUrl(c.clientId, { codeChallenge: challenge, codeChallengeMethod: 'S256', state: 'p' }),
    );
    const code2 = new URL(fresh.headers.location as string).searchParams.get('code')!;
    expect(
      (
        await token(
          { grant_type: 'authorization_code', code: code2, redirect_uri: REDIRECT_URI, code_verifier: verifier },
          auth,
        )
      ).statusCode,
    ).toBe(200);
  });
});

describe('a public application always gets the consent page', () => {
  it('even with a matching token', async () => {
    await grant(pub.application.id, alice.id, ['api', 'read_user']);
    expect(
      await hasLiveGrantCovering(f.db, {
        applicationId: pub.application.id,
        userId: alice.id,
        scopes: ['api', 'read_user'],
      }),
    ).toBe(true);
    expectConsentPage(
      await web.get(
        authorizeUrl(pub.clientId, { codeChallenge: 'c'.repeat(43), codeChallengeMethod: 'plain', state: 's' }),
      ),
    );
  });
});
