// Attack (issue 22): "a shown-once secret in the flash is taken by whichever account page loads
// first" — a new personal access token was lost for good when another account page (a second tab)
// loaded first, and recovery codes reaching the applications page answered 500. The flash is now
// bound to the page its post redirected to: other pages leave it alone, and that page shows it once.
import { beforeEach, describe, expect, it } from 'vitest';
import { totp } from '../support/totp';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let web: WebClient;
beforeEach(async () => {
  await resetDatabase(f.db);
  web = new WebClient(f.app);
});

const PATS = '/-/user_settings/personal_access_tokens';
const TFA = '/-/profile/two_factor_auth';
const APPS = '/profile/applications';
const OTHER_PAGES = [TFA, APPS, '/-/profile/notifications', '/-/user_settings/password/edit', PATS];
const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
const tokenOf = (body: string) => /id="created-personal-access-token">\s*(glpat-[A-Za-z0-9_-]+)/.exec(body)?.[1];
const codesOf = (body: string) =>
  [...body.matchAll(/<li><code class="secret">([0-9a-f]{16})<\/code><\/li>/g)].map((m) => m[1]);

describe('a shown-once secret is taken by whichever account page loads first', () => {
  it('a new token waits for its own page while every other account page loads first', async () => {
    await makeUser(f.db, 'bob');
    web = new WebClient(f.app);
    expect((await web.signIn('bob', PASSWORD)).statusCode).toBe(302);
    const page = await web.get(PATS);
    const created = await web.post(PATS, {
      authenticity_token: WebClient.csrf(page.body),
      'personal_access_token[name]': 'ci',
      'personal_access_token[expires_at]': day(30),
      'personal_access_token[scopes][]': 'read_user',
    });
    expect(created.statusCode).toBe(303);
    expect(created.headers.location).toBe(PATS);
    for (const other of OTHER_PAGES.filter((p) => p !== PATS)) {
      const res = await web.get(other);
      expect(res.statusCode, other).toBe(200);
      expect(res.body, other).not.toContain('glpat-');
      expect(res.body, other).not.toContain('id="flash-notice"');
    }
    const shown = await web.get(PATS);
    const token = tokenOf(shown.body);
    expect(token).toMatch(/^glpat-[A-Za-z0-9_-]{43}$/);
    expect(shown.body).toContain('id="flash-notice"');
    // It works, and it was shown once.
    const user = await f.app.inject({ url: '/api/v4/user', headers: { 'private-token': token! } });
    expect(user.json()).toMatchObject({ username: 'bob' });
    expect(tokenOf((await web.get(PATS)).body)).toBeUndefined();
  });

  it('recovery codes never reach the applications page (was a 500) and are shown on their own page', async () => {
    await makeUser(f.db, 'carol');
    web = new WebClient(f.app);
    expect((await web.signIn('carol', PASSWORD)).statusCode).toBe(302);
    // Enrol on the page, then regenerate: two shown-once sets of codes.
    const enrolPage = await web.get(TFA);
    const seed = /id="otp-secret">([^<]+)</.exec(enrolPage.body)![1].replace(/ /g, '');
    const enrolled = await web.post(TFA, { authenticity_token: WebClient.csrf(enrolPage.body), pin_code: totp(seed) });
    expect(enrolled.headers.location).toBe(TFA);
    const apps = await web.get(APPS);
    expect(apps.statusCode).toBe(200);
    expect(apps.body).not.toContain('id="recovery-codes"');
    expect(apps.body).not.toContain('id="new-secret"');
    const shown = await web.get(TFA);
    expect(codesOf(shown.body)).toHaveLength(10);
    // Kept on their own page until the person says they saved them (issue 28), then never again.
    expect(codesOf((await web.get(TFA)).body)).toEqual(codesOf(shown.body));
    const saved = await web.post(`${TFA}/codes/saved`, { authenticity_token: WebClient.csrf(shown.body) });
    expect(saved.statusCode).toBe(303);
    expect(codesOf((await web.get(TFA)).body)).toEqual([]);
  });

  it("an application secret waits for the application's own page", async () => {
    await makeUser(f.db, 'dave');
    web = new WebClient(f.app);
    expect((await web.signIn('dave', PASSWORD)).statusCode).toBe(302);
    const page = await web.get(APPS);
    const res = await web.post(APPS, {
      authenticity_token: WebClient.csrf(page.body),
      'doorkeeper_application[name]': 'CI',
      'doorkeeper_application[redirect_uri]': 'https://ci.example/cb',
      'doorkeeper_application[scopes][]': 'read_user',
    });
    expect(res.statusCode).toBe(303);
    const own = res.headers.location as string;
    expect(own).toMatch(/^\/profile\/applications\/[1-9][0-9]*$/);
    for (const other of [PATS, TFA, APPS]) {
      const r = await web.get(other);
      expect(r.statusCode).toBe(200);
      expect(r.body).not.toContain('gloas-');
    }
    const shown = await web.get(own);
    expect(/id="application-secret">\s*(gloas-[0-9a-f]{64})/.exec(shown.body)?.[1]).toMatch(/^gloas-/);
  });
});
