// Regression (issue 11, "token info answers 200 for a blocked user's token"): GET /oauth/token/info
// applies the API's blocked-user rule, so a resource server trusting it does not let a blocked
// user in for the rest of the token's two hours. Unblocking makes the token valid again, as on
// the API (blocking revokes nothing).
import { describe, expect, it } from 'vitest';
import { setUserState } from '../../service/domain/users';
import { basic, form, FORM, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();

describe("token info answers 200 for a blocked user's token", () => {
  it('401 invalid_token once the user is blocked, like the API (403 there)', async () => {
    await makeUser(f.db, 'mallory');
    const c = await makeApp(f.db);
    const tokens = (
      await f.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
        payload: form({ grant_type: 'password', username: 'mallory', password: PASSWORD }),
      })
    ).json();
    const info = () =>
      f.app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect((await info()).statusCode).toBe(200);

    await setUserState(f.db, 'mallory', 'blocked');
    const res = await info();
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 401,
      body: { error: 'invalid_token', error_description: 'The access token is invalid', state: 'unauthorized' },
    });
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="Doorkeeper", error="invalid_token", error_description="The access token is invalid"',
    );
    const api = await f.app.inject({
      url: '/api/v4/user',
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect({ status: api.statusCode, body: api.json() }).toEqual({ status: 403, body: { message: '403 Forbidden' } });
    const query = await f.app.inject({ url: `/oauth/token/info?access_token=${tokens.access_token}` });
    expect({ status: query.statusCode, body: query.json() }).toEqual({
      status: 401,
      body: { error: 'invalid_token', error_description: 'The access token is invalid', state: 'unauthorized' },
    });

    await setUserState(f.db, 'mallory', 'active');
    expect((await info()).statusCode).toBe(200);
  });
});
