// Regression (issue 11, defence in depth: "Origin/Referer check on forms"): a form post whose
// Origin (or, without one, Referer) is another site is refused with a 403 page and changes
// nothing, even with a valid CSRF token; same-site and header-less posts work as before.
import { describe, expect, it } from 'vitest';
import { WebClient } from '../oauth/support/browser-like';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

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
