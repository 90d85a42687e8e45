// The attack suite (issue 22, "revoking a refresh token while it is being refreshed leaves a live
// chain"): a revocation and a refresh of one refresh token sent together, 50 times with the two
// requests' start shifted against each other. Revocation and rotation serialise on the chain's row
// lock, so whichever wins, after the revocation's 200 no token of the chain works: the first pair,
// and the pair the concurrent refresh may have been handed.
import { beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../support/api-fixtures';
import { obtainCode, WebClient } from '../oauth/support/browser-like';
import { INVALID_TOKEN_BODY } from '../oauth/support/contract';
import { basic, form, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from '../oauth/support/harness';

const ROUNDS = 50;
const f = useFixture({ max: 20 });
let base: string;
let c: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;
beforeAll(async () => {
  base = await listen(f.app);
  await makeUser(f.db, 'alice');
  c = await makeApp(f.db);
  web = new WebClient(f.app);
  await web.signIn('alice', PASSWORD);
});

const post = (path: string, values: Record<string, string>) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(c.clientId, c.secret) },
    body: form(values),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

const info = (token: string) =>
  fetch(`${base}/oauth/token/info`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => ({
    status: r.status,
    body: await r.json(),
  }));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(`revocation vs refresh, ${ROUNDS} interleavings`, () => {
  it('after the revocation answers 200, no token of the chain works, whichever request won', async () => {
    const outcomes = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      const code = await obtainCode(web, c.clientId);
      const first = await post('/oauth/token', { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
      expect(first.status).toBe(200);
      // Shift one request against the other by 0–4 ms, each side in turn.
      const shift = round % 5;
      const [refreshed, revoked] = await Promise.all([
        sleep(round % 2 ? shift : 0).then(() =>
          post('/oauth/token', { grant_type: 'refresh_token', refresh_token: first.body.refresh_token }),
        ),
        sleep(round % 2 ? 0 : shift).then(() =>
          post('/oauth/revoke', { token: first.body.refresh_token, token_type_hint: 'refresh_token' }),
        ),
      ]);
      expect(revoked).toEqual({ status: 200, body: {} });
      const key = `refresh ${refreshed.status}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      const tokens = [first.body.access_token];
      if (refreshed.status === 200) {
        tokens.push(refreshed.body.access_token);
        // The pair handed to the refresh is dead too: it cannot be refreshed again.
        const again = await post('/oauth/token', {
          grant_type: 'refresh_token',
          refresh_token: refreshed.body.refresh_token,
        });
        expect(again.status, `round ${round}: the successor's refresh token still works`).toBe(400);
      } else {
        expect(refreshed.status).toBe(400);
        expect(refreshed.body.error).toBe('invalid_grant');
      }
      for (const token of tokens)
        expect(await info(token), `round ${round}: a token of the revoked chain still works`).toEqual({
          status: 401,
          body: INVALID_TOKEN_BODY,
        });
    }
    console.log(`[attack] revoke vs refresh ×${ROUNDS}: ${JSON.stringify(Object.fromEntries(outcomes))}`);
    // Nothing of the application's chains is alive.
    const live = await f.db
      .selectFrom('oauth_access_tokens')
      .select('id')
      .where('application_id', '=', c.application.id)
      .where('revoked_at', 'is', null)
      .execute();
    expect(live).toEqual([]);
  });
});
