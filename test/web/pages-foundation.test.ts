// The page foundation: one stylesheet from our own origin (hashed name, a year's cache, ETag),
// and every page under a strict CSP (no inline styles or scripts) linking to it.
import { describe, expect, it } from 'vitest';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';
import { WebClient } from '../oauth/support/browser-like';

const f = useFixture();

describe('pages foundation', () => {
  it('every page links the one stylesheet and has no inline style or script', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    const signIn = await web.get('/users/sign_in');
    expect(signIn.statusCode).toBe(200);
    expect(signIn.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    await web.signIn('alice', PASSWORD);
    const apps = await web.get('/profile/applications');
    for (const page of [signIn, apps]) {
      const links = [...page.body.matchAll(/<link rel="stylesheet" href="([^"]+)">/g)].map((m) => m[1]);
      expect(links).toHaveLength(1);
      expect(links[0]).toMatch(/^\/-\/assets\/lanyard-[0-9a-f]{16}\.css$/);
      // Same-origin scripts only, deferred: the pages' one, and on sign-in the passkey ceremonies';
      // no inline code or style.
      const scripts = [...page.body.matchAll(/<script src="([^"]+)" defer><\/script>/g)].map((m) => m[1]);
      expect(scripts).toContainEqual(expect.stringMatching(/^\/-\/assets\/lanyard-[0-9a-f]{16}\.js$/));
      for (const src of scripts) expect(src).toMatch(/^\/-\/assets\/(lanyard|webauthn)-[0-9a-f]{16}\.js$/);
      const rest = page.body.replace(/<script src="[^"]+" defer><\/script>/g, '');
      expect(rest).not.toMatch(/<script|<style|\sstyle=|\son[a-z]+=/i);
      expect(page.body).toMatch(/<main id="main">/);
    }
    expect(apps.body).toContain('<nav class="side-nav" aria-label="User settings">');
    expect(apps.body).toContain('<a href="/profile/applications" aria-current="page">Applications</a>');
  });

  it('the stylesheet: text/css, cached for a year, 304 on a matching ETag; other names 404', async () => {
    const page = await f.app.inject({ method: 'GET', url: '/users/sign_in' });
    const href = /<link rel="stylesheet" href="([^"]+)">/.exec(page.body)![1];
    const css = await f.app.inject({ method: 'GET', url: href });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(css.body).toContain('prefers-color-scheme:dark');
    const etag = css.headers.etag as string;
    expect(etag).toBe(`"${href.slice('/-/assets/lanyard-'.length, -'.css'.length)}"`);
    const again = await f.app.inject({ method: 'GET', url: href, headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect((await f.app.inject({ method: 'GET', url: '/-/assets/lanyard-0000000000000000.css' })).statusCode).toBe(404);
  });
});
