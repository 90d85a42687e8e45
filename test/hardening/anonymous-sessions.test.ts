// Regression (issue 11, "every cookie-less GET /users/sign_in writes a session row"): before
// sign-in the session lives in a signed cookie (HMAC under the service key ring) and nothing is
// written; a row exists only once someone signs in. The cookie cannot be forged, altered or kept
// past its hour, and its CSRF token still protects the form.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { authorizeUrl, WebClient } from '../oauth/support/browser-like';
import { FORM, form, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();

/** Every row of every table, as one number per table: any write shows. */
async function rowCounts(): Promise<Record<string, number>> {
  const { rows } = await sql<{ tablename: string }>`
    select tablename from pg_tables where schemaname = 'public' order by tablename
  `.execute(f.db);
  const counts: Record<string, number> = {};
  for (const { tablename } of rows) {
    const r = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(tablename)}`.execute(f.db);
    counts[tablename] = r.rows[0].n;
  }
  return counts;
}

const sessionRows = async () => (await f.db.selectFrom('web_sessions').select('user_id').execute()).length;

describe('every cookie-less GET /users/sign_in writes a session row', () => {
  it('100 cookie-less GETs write 0 rows; each still gets a form with a CSRF token', async () => {
    await makeUser(f.db, 'alice');
    // The first request may create the service key ring (one row, once per deployment).
    await f.app.inject({ url: '/users/sign_in' });
    const before = await rowCounts();
    const pages = await Promise.all(Array.from({ length: 100 }, () => f.app.inject({ url: '/users/sign_in' })));
    expect(pages.map((p) => p.statusCode)).toEqual(Array(100).fill(200));
    for (const p of pages) expect(p.body).toMatch(/name="authenticity_token" value="[A-Za-z0-9_-]{43}"/);
    expect(await rowCounts()).toEqual(before);
    expect(before.web_sessions).toBe(0);
  });

  it('the signed-out authorize redirect keeps its return path in the cookie; the row comes with sign-in', async () => {
    const c = await makeApp(f.db);
    const web = new WebClient(f.app);
    const url = authorizeUrl(c.clientId, { state: 'xyz' });
    expect((await web.get(url)).headers.location).toBe('/users/sign_in');
    expect(await sessionRows()).toBe(0);
    const page = await web.get('/users/sign_in');
    const res = await web.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(page.body),
      'user[login]': 'alice',
      'user[password]': PASSWORD,
    });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(url);
    expect(await sessionRows()).toBe(1);
  });

  it('an altered, forged or expired anonymous cookie is no session (CSRF refused, no return path)', async () => {
    const web = new WebClient(f.app);
    await web.get('/profile/applications'); // remembers return_to=/profile/applications
    const page = await web.get('/users/sign_in');
    const token = WebClient.csrf(page.body);
    const cookie = web.cookies.get('_lanyard_session')!;
    const [nonce, expiry, payload, signature] = cookie.split('.');
    expect(JSON.parse(Buffer.from(payload, 'base64url').toString())).toEqual({ return_to: '/profile/applications' });
    const evil = Buffer.from(JSON.stringify({ return_to: '/oauth/authorize?evil' })).toString('base64url');
    const variants = [
      `${nonce}.${expiry}.${evil}.${signature}`, // altered data
      `${nonce}.${Number(expiry) + 86400}.${payload}.${signature}`, // extended life
      `${'0'.repeat(32)}.${expiry}.${payload}.${signature}`, // another nonce
      `${nonce}.${expiry}.${payload}.${'A'.repeat(43)}`, // forged signature
    ];
    for (const value of variants) {
      const res = await f.app.inject({
        method: 'POST',
        url: '/users/sign_in',
        headers: { ...FORM, cookie: `_lanyard_session=${value}` },
        payload: form({ authenticity_token: token, 'user[login]': 'alice', 'user[password]': PASSWORD }),
      });
      expect(res.statusCode).toBe(422);
    }
    // The genuine cookie works and leads back to the remembered path.
    const ok = await web.post('/users/sign_in', {
      authenticity_token: token,
      'user[login]': 'alice',
      'user[password]': PASSWORD,
    });
    expect(ok.headers.location).toBe('/profile/applications');
  });
});
