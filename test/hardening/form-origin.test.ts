// Regression (issue 11, defence in depth: "Origin/Referer check on forms"): a form post whose
// Origin (or, without one, Referer) is another site is refused with a 403 page and changes
// nothing, even with a valid CSRF token; same-site and header-less posts work as before.
// Issue 21: one rule for every form of both page surfaces — `Origin: null` (a sandboxed frame, a
// data: document; never our own pages, which send Referrer-Policy: same-origin) is refused on the
// account pages too, which once let it through with their own copy of the check.
import { describe, expect, it } from 'vitest';
import { WebClient } from '../oauth/support/browser-like';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture({ config: { publicUrl: 'https://lanyard.example.com' } });

async function attempt(headers: Record<string, string>) {
  const web = new WebClient(f.app);
  const page = await web.get('/users/sign_in');
  return web.post(
    '/users/sign_in',
    { authenticity_token: WebClient.csrf(page.body), 'user[login]': 'alice', 'user[password]': PASSWORD },
    headers,
  );
}

describe('Origin/Referer check on forms', () => {
  it('cross-origin Origin or Referer → 403 page, nothing changes; same-origin and absent → served', async () => {
    await makeUser(f.db, 'alice');
    const crossSite: Array<Record<string, string>> = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: 'http://lanyard.example.com' }, // another scheme is another origin
      { referer: 'https://evil.example/phish?x=1' },
      { origin: 'https://evil.example', referer: 'https://lanyard.example.com/users/sign_in' },
    ];
    for (const headers of crossSite) {
      const res = await attempt(headers);
      expect({ headers, status: res.statusCode }).toEqual({ headers, status: 403 });
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.body).toContain('This form was sent from another site.');
    }
    expect(await f.db.selectFrom('web_sessions').select('id_digest').execute()).toEqual([]);
    const signedIn = await f.db.selectFrom('users').select('current_sign_in_at').executeTakeFirstOrThrow();
    expect(signedIn.current_sign_in_at).toBeNull();

    const sameSite: Array<Record<string, string>> = [
      {},
      { origin: 'https://lanyard.example.com' },
      { referer: 'https://lanyard.example.com/users/sign_in' },
      { origin: 'http://localhost:80' }, // the host the browser used (inject's Host is localhost:80)
    ];
    for (const headers of sameSite) {
      const res = await attempt(headers);
      expect({ headers, status: res.statusCode }).toEqual({ headers, status: 302 });
    }
  });
});

describe('one Origin rule for the forms of both page surfaces', () => {
  const FORBIDDEN = 'This form was sent from another site.';

  it('Origin: null → 403 on an account page, the consent form and the device form; nothing changes', async () => {
    await makeUser(f.db, 'bob');
    const c = await makeApp(f.db, { name: 'Kiosk', scopes: 'api' });
    const web = new WebClient(f.app);
    expect((await web.signIn('bob', PASSWORD)).statusCode).toBe(302);

    const tokens = await web.get('/-/user_settings/personal_access_tokens');
    expect(tokens.statusCode).toBe(200);
    const createToken = (headers: Record<string, string>) =>
      web.post(
        '/-/user_settings/personal_access_tokens',
        {
          authenticity_token: WebClient.csrf(tokens.body),
          'personal_access_token[name]': 'ci',
          'personal_access_token[expires_at]': new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10),
          'personal_access_token[scopes][]': 'api',
        },
        headers,
      );
    const refused = await createToken({ origin: 'null' });
    expect({ status: refused.statusCode, type: refused.headers['content-type'] }).toEqual({
      status: 403,
      type: 'text/html; charset=utf-8',
    });
    expect(refused.body).toContain(FORBIDDEN);
    expect(await f.db.selectFrom('personal_access_tokens').select('id').execute()).toEqual([]);

    const consent = await web.post(
      '/oauth/authorize',
      {
        authenticity_token: WebClient.csrf(tokens.body),
        client_id: c.clientId,
        redirect_uri: 'https://client.example/callback',
        response_type: 'code',
        scope: 'api',
        decision: 'authorize',
      },
      { origin: 'null' },
    );
    expect(consent.statusCode).toBe(403);
    expect(consent.body).toContain(FORBIDDEN);
    expect(await f.db.selectFrom('oauth_authorization_codes').select('id').execute()).toEqual([]);

    const device = await f.app.inject({
      method: 'POST',
      url: '/oauth/authorize_device',
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: form({ scope: 'api' }),
    });
    expect(device.statusCode).toBe(200);
    const devicePage = await web.get('/oauth/device');
    const decided = await web.post(
      '/oauth/device',
      {
        authenticity_token: WebClient.csrf(devicePage.body),
        user_code: device.json().user_code,
        decision: 'authorize',
      },
      { origin: 'null' },
    );
    expect(decided.statusCode).toBe(403);
    expect(decided.body).toContain(FORBIDDEN);
    expect(await f.db.selectFrom('oauth_device_grants').select(['status', 'user_id']).execute()).toEqual([
      { status: 'pending', user_id: null },
    ]);

    // Our own origin, and no Origin at all: the account page's form works.
    expect((await createToken({ origin: 'https://lanyard.example.com' })).statusCode).toBe(303);
    expect((await createToken({})).statusCode).toBe(303);
    expect(await f.db.selectFrom('personal_access_tokens').select('name').execute()).toEqual([
      { name: 'ci' },
      { name: 'ci' },
    ]);
  });
});
