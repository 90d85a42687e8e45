// git's own OAuth helper, unchanged: Debian's git-credential-oauth 0.4.2 run by `git credential
// fill` against the real server, its browser step done by headless Chromium through the real
// sign-in and consent pages. 0.4.2 sends a standard-base64 PKCE verifier (`+`, `/`, a trailing `=`),
// which Lanyard refused before it accepted verifiers as Doorkeeper does. The token it hands git
// must work on /api/v4/user.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';
import { CHROMIUM, launchChromium, listenOnLoopback } from '../support/chromium';

const HELPER = process.env.GIT_CREDENTIAL_OAUTH ?? '/usr/bin/git-credential-oauth';
const missing = [HELPER, CHROMIUM, '/usr/bin/git'].filter((p) => !fs.existsSync(p));
if (missing.length) {
  console.warn(
    `[clients] SKIPPED git-credential-oauth: missing ${missing.join(', ')} ` +
      '(install with: apt-get install -y git git-credential-oauth chromium)',
  );
}

const f = useFixture();
let browser: Browser;
let base: string;
let home: string;
const verifiers: string[] = [];

beforeAll(async () => {
  if (missing.length) return;
  // What the helper sends as code_verifier, seen where the token endpoint reads it.
  f.app.addHook('preHandler', async (request) => {
    const body = request.body as Record<string, unknown> | undefined;
    if (request.url === '/oauth/token' && typeof body?.code_verifier === 'string') verifiers.push(body.code_verifier);
  });
  base = await listenOnLoopback(f);
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'git-oauth-'));
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

/**
 * Run `git credential fill` with the helper configured as its documentation says for a GitLab
 * host it does not know (credential.oauth* keys). 0.4.2 runs `open <authorize URL>` when `open`
 * is on PATH (on Debian /usr/bin/open is openvt, which fails): a stub `open` first on PATH plays
 * the desktop's browser launcher by recording the URL, which the test then visits in Chromium.
 */
function credentialFill(clientId: string, secret: string) {
  const opened = path.join(home, 'opened-url');
  fs.rmSync(opened, { force: true });
  const bin = path.join(home, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(
    path.join(bin, 'open'),
    `#!/bin/sh\nprintf '%s' "$1" > '${opened}.part' && mv '${opened}.part' '${opened}'\n`,
    {
      mode: 0o755,
    },
  );
  const gitconfig = path.join(home, 'gitconfig');
  fs.writeFileSync(
    gitconfig,
    [
      '[credential]',
      '\thelper = oauth',
      `[credential "${base}"]`,
      `\toauthClientId = ${clientId}`,
      `\toauthClientSecret = ${secret}`,
      '\toauthScopes = read_user',
      '\toauthAuthURL = /oauth/authorize',
      '\toauthTokenURL = /oauth/token',
      '',
    ].join('\n'),
  );
  const child = spawn('git', ['credential', 'fill'], {
    env: {
      PATH: `${bin}:${process.env.PATH}`,
      HOME: home,
      GIT_CONFIG_GLOBAL: gitconfig,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_TERMINAL_PROMPT: '0',
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const { host } = new URL(base);
  child.stdin.end(`protocol=http\nhost=${host}\n\n`);
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  const authorizeUrl = async () => {
    for (let i = 0; i < 300 && !fs.existsSync(opened); i++) await new Promise((r) => setTimeout(r, 100));
    if (!fs.existsSync(opened)) throw new Error(`the helper opened no URL; stderr: ${stderr}`);
    return fs.readFileSync(opened, 'utf8');
  };
  return { authorizeUrl, exited, kill: () => child.kill() };
}

describe.skipIf(missing.length > 0)('git-credential-oauth 0.4.2 (Debian) through git credential fill', () => {
  it('signs in in the browser, exchanges a standard-base64 verifier, and hands git a token that works on /api/v4', async () => {
    await makeUser(f.db, 'alice');
    // Registered as GitLab's docs tell its users to register the helper: a loopback redirect URI
    // (any port, RFC 8252 §7.3), confidential, the scopes the helper asks for.
    const app = await makeApp(f.db, {
      name: 'git-credential-oauth',
      redirectUris: ['http://127.0.0.1'],
      scopes: 'read_user',
    });
    const run = credentialFill(app.clientId, app.secret!);
    const context = await browser.newContext();
    try {
      const url = new URL(await run.authorizeUrl());
      expect(url.origin + url.pathname).toBe(`${base}/oauth/authorize`);
      expect(url.searchParams.get('code_challenge_method')).toBe('S256');
      expect(url.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

      const page = await context.newPage();
      await page.goto(url.href);
      expect(new URL(page.url()).pathname).toBe('/users/sign_in');
      await page.fill('input[name="user[login]"]', 'alice');
      await page.fill('input[name="user[password]"]', PASSWORD);
      await page.click('button[type="submit"]');
      await page.waitForURL((u) => u.pathname === '/oauth/authorize');
      expect(await page.textContent('body')).toContain('git-credential-oauth is requesting access to your account');
      await page.getByRole('button', { name: 'Authorize' }).click();
      // The helper's own loopback server answers the redirect.
      await page.waitForURL((u) => u.href.startsWith(url.searchParams.get('redirect_uri')!));
      expect(await page.textContent('body')).toBe('Success. You may close this page and return to Git.');

      const { code, stdout, stderr } = await run.exited;
      expect(code, stderr).toBe(0);
      const fields = Object.fromEntries(
        stdout
          .trim()
          .split('\n')
          .map((l) => l.split(/=(.*)/s, 2)),
      );
      expect(Object.keys(fields).sort()).toEqual(['host', 'password', 'protocol', 'username']);
      expect(fields).toMatchObject({ protocol: 'http', host: new URL(base).host, username: 'oauth2' });

      // 32 random bytes in standard base64: 43 characters and one `=`, outside RFC 7636's alphabet.
      expect(verifiers).toHaveLength(1);
      expect(verifiers[0]).toMatch(/^[A-Za-z0-9+/]{43}=$/);

      const me = await fetch(`${base}/api/v4/user`, { headers: { authorization: `Bearer ${fields.password}` } });
      expect(me.status).toBe(200);
      expect(((await me.json()) as { username: string }).username).toBe('alice');
    } finally {
      run.kill();
      await context.close();
    }
  }, 90_000);
});
