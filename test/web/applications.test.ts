// /profile/applications: the list (20 a page), "New application" on its own page, each
// application's page (App ID, redirect URIs one per line, the secret shown once after create and
// renew), Edit (the App ID, secret and tokens stay), Renew secret and Destroy behind confirm pages;
// every POST answers 303 (post/redirect/get); bad input is the form again at its field, nothing changed.
import { beforeEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../service/domain/secrets';
import { resetDatabase } from '../support/db';
import { authorizeUrl, WebClient } from '../oauth/support/browser-like';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let web: WebClient;
let aliceId: number;
beforeEach(async () => {
  await resetDatabase(f.db, ['service_keys']);
  aliceId = (await makeUser(f.db, 'alice')).user.id;
  web = new WebClient(f.app);
  await web.signIn('alice', PASSWORD);
});

const F = 'doorkeeper_application';
const secretOf = (html: string) => /id="application-secret">([^<]+)</.exec(html)?.[1];
const fieldError = (body: string, id: string) =>
  new RegExp(`id="${id}-error"><span class="visually-hidden">Error: </span>([^<]*)<`).exec(body)?.[1];
const APP_COLUMNS = [
  'id',
  'uid',
  'name',
  'secret_digest',
  'redirect_uris',
  'post_logout_redirect_uris',
  'backchannel_logout_uri',
  'backchannel_logout_session_required',
  'scopes',
  'confidential',
  'owner_id',
  'trusted',
] as const;
const rows = () => f.db.selectFrom('oauth_applications').select(APP_COLUMNS).orderBy('id').execute();

function expectSeeOther(res: { statusCode: number; headers: Record<string, unknown>; body: string }, location: string) {
  expect(res.statusCode).toBe(303);
  expect(res.headers.location).toBe(location);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.body).toBe('');
}

/** Register through the new-application page. */
async function register(values: Array<[string, string]>) {
  const page = await web.get('/profile/applications/new');
  expect(page.statusCode).toBe(200);
  return web.postRaw(
    '/profile/applications',
    new URLSearchParams([['authenticity_token', WebClient.csrf(page.body)], ...values]).toString(),
  );
}
const valid = (extra: Array<[string, string]> = []): Array<[string, string]> => [
  [`${F}[name]`, 'A'],
  [`${F}[redirect_uri]`, 'https://a.example/cb'],
  [`${F}[scopes][]`, 'api'],
  ...extra,
];

describe('/profile/applications', () => {
  it('the list leads with "New application"; the form is on its own page', async () => {
    const list = await web.get('/profile/applications');
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain(
      '<div class="page-actions"><h2 id="your-applications">Your applications (0)</h2><a class="button primary" href="/profile/applications/new">New application</a></div>',
    );
    expect(list.body).not.toContain('<form method="post" action="/profile/applications"');
    // The old anchor of the authorized applications leads to their page.
    expect(list.body).toContain(
      '<p id="authorized-applications" class="muted">Applications you allowed to use your account are under <a href="/-/user_settings/authorized_applications">Authorized applications</a>.</p>',
    );
    expect((await web.get('/-/user_settings/applications')).body).toContain('Your applications (0)');
    const form = await web.get('/profile/applications/new');
    expect(form.body).toContain('<form method="post" action="/profile/applications" class="panel">');
    expect(form.body).toContain('<a href="/profile/applications" aria-current="page">Applications</a>');
  });

  it("registers: 303 to the application's page, which shows the secret once with copy buttons; a digest at rest", async () => {
    const res = await register([
      [`${F}[name]`, 'My <script>alert(1)</script> app'],
      [`${F}[redirect_uri]`, 'https://app.example/cb\nhttp://127.0.0.1:9000/cb'],
      [`${F}[post_logout_redirect_uri]`, 'https://app.example/bye\n https://app.example/bye '],
      [`${F}[backchannel_logout_uri]`, 'https://app.example/backchannel'],
      [`${F}[backchannel_logout_session_required]`, '1'],
      [`${F}[scopes][]`, 'read_user'],
      [`${F}[scopes][]`, 'api'],
      [`${F}[confidential]`, '1'],
    ]);
    const [row] = await rows();
    expectSeeOther(res, `/profile/applications/${row.id}`);
    const shown = await web.get(`/profile/applications/${row.id}`);
    expect(shown.body).toContain(
      '<div class="flash flash-notice" role="status" id="flash-notice">The application was created.</div>',
    );
    const secret = secretOf(shown.body)!;
    expect(secret).toMatch(/^gloas-[0-9a-f]{64}$/);
    expect(shown.body).toContain(
      '<button type="button" class="button small copy" data-copy="#application-secret" aria-label="Copy the secret" hidden>Copy</button>',
    );
    expect(shown.body).toContain(
      `<dt>App ID</dt><dd><div class="copyable"><code class="secret" id="application-id">${row.uid}</code><button type="button" class="button small copy" data-copy="#application-id" aria-label="Copy the App ID" hidden>Copy</button></div></dd>`,
    );
    // One redirect URI a line.
    expect(shown.body).toContain(
      '<ul class="uri-list" id="redirect-uris"><li><code>https://app.example/cb</code></li><li><code>http://127.0.0.1:9000/cb</code></li></ul>',
    );
    expect(shown.body).not.toContain('<script>alert(1)</script>');
    expect(shown.body).toContain('<h1>My &lt;script&gt;alert(1)&lt;/script&gt; app</h1>');
    expect(row).toMatchObject({
      name: 'My <script>alert(1)</script> app',
      secret_digest: sha256Hex(secret),
      redirect_uris: ['https://app.example/cb', 'http://127.0.0.1:9000/cb'],
      post_logout_redirect_uris: ['https://app.example/bye'],
      backchannel_logout_uri: 'https://app.example/backchannel',
      backchannel_logout_session_required: true,
      scopes: ['api', 'read_user'],
      confidential: true,
      owner_id: aliceId,
      trusted: false,
    });
    // A reload (or Back): no secret, no message.
    const again = await web.get(`/profile/applications/${row.id}`);
    expect(again.body).not.toContain('flash-notice');
    expect(secretOf(again.body)).toBeUndefined();
    expect(again.body).not.toContain(secret);
    expect(again.body).toContain(row.uid);
    // Listed: name (a link to its page), scopes, confidential, created.
    const list = await web.get('/profile/applications');
    expect(list.body).toContain(
      `<td data-label="Name"><a href="/profile/applications/${row.id}">My &lt;script&gt;alert(1)&lt;/script&gt; app</a></td><td data-label="Scopes"><span class="badge">api</span><span class="badge">read_user</span></td><td data-label="Confidential">Yes</td>`,
    );
    expect(list.body).not.toContain(secret);
  });

  it.each([
    [[`${F}[name]`, ' '], 'app_name', 'Enter a name for the application'],
    [[`${F}[name]`, 'x'.repeat(256)], 'app_name', 'Name must be 255 characters or fewer'],
    [
      [`${F}[redirect_uri]`, 'javascript:scope()'],
      'app_redirect_uri',
      'Redirect URIs must not start with javascript:, data:, vbscript:, file: or blob:',
    ],
    [[`${F}[redirect_uri]`, ''], 'app_redirect_uri', 'Enter at least one redirect URI'],
    [
      [`${F}[redirect_uri]`, 'app.example/callback'],
      'app_redirect_uri',
      'Enter each redirect URI on its own line as a full address, like https://app.example/callback',
    ],
    [
      [`${F}[redirect_uri]`, 'https://app.example/cb#x'],
      'app_redirect_uri',
      'Redirect URIs must not contain a # fragment',
    ],
    [
      [`${F}[post_logout_redirect_uri]`, 'https://app.example/bye#top'],
      'app_post_logout_redirect_uri',
      'Post-logout redirect URIs must not contain a # fragment',
    ],
    [
      [`${F}[allowed_resources]`, 'http://mcp.example.com/mcp'],
      'app_allowed_resources',
      'Allowed resources must start with https:// (or http:// for localhost, 127.0.0.1 or [::1])',
    ],
    [
      [`${F}[backchannel_logout_uri]`, 'ftp://app.example/logout'],
      'app_backchannel_logout_uri',
      'Enter the back-channel logout URI as a full http or https address, like https://app.example/logout',
    ],
    [[`${F}[scopes][]`, 'nope'], 'app_scopes', 'Select at least one scope from the list'],
    [[`${F}[scopes]`, ''], 'app_scopes', 'Select at least one scope from the list'],
  ] as Array<[[string, string], string, string]>)(
    'bad input %j → 303 back to the form, the message at %s only, nothing created',
    async ([key, value], id, message) => {
      const values = valid().filter(([k]) => !k.startsWith(key.replace('[]', '')));
      // Post/redirect/get for a refusal too: Back and reload never re-post the form.
      expectSeeOther(await register([...values, [key, value]]), '/profile/applications/new');
      const res = await web.get('/profile/applications/new');
      expect(res.statusCode).toBe(200);
      expect(fieldError(res.body, id)).toBe(message);
      expect(res.body).toContain(
        `<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#${id}">${message}</a></li></ul>`,
      );
      // The field says it is wrong (a fieldset of checkboxes by its description: aria-invalid is not for groups).
      expect(res.body).toContain(
        id === 'app_scopes'
          ? `<fieldset class="field invalid" id="${id}" aria-describedby="${id}-hint ${id}-error">`
          : `aria-invalid="true" aria-describedby="${id}-hint ${id}-error"`,
      );
      expect(res.body.match(/class="field-error"/g)).toHaveLength(1);
      expect(res.body).not.toMatch(/choose from|forbidden scheme|must not be empty/);
      expect(await rows()).toEqual([]);
      // Shown once: a reload is the empty form.
      expect((await web.get('/profile/applications/new')).body).not.toContain('field-error');
    },
  );

  it('edit keeps the App ID, the secret and issued tokens; the new values are used at once', async () => {
    const mine = await makeApp(f.db, {
      name: 'Typo',
      redirectUris: ['https://app.example/calback'],
      scopes: 'api',
      ownerId: aliceId,
    });
    const [before] = await rows();
    const form = await web.get(`/profile/applications/${before.id}/edit`);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain(`<form method="post" action="/profile/applications/${before.id}" class="panel">`);
    expect(form.body).toContain('>https://app.example/calback</textarea>');
    const res = await web.postRaw(
      `/profile/applications/${before.id}`,
      new URLSearchParams([
        ['authenticity_token', WebClient.csrf(form.body)],
        [`${F}[name]`, 'Fixed'],
        [`${F}[redirect_uri]`, 'https://app.example/callback\nhttps://app.example/other'],
        [`${F}[scopes][]`, 'read_user'],
        [`${F}[scopes][]`, 'openid'],
        [`${F}[confidential]`, '1'],
      ]).toString(),
    );
    expectSeeOther(res, `/profile/applications/${before.id}`);
    expect(await rows()).toEqual([
      {
        ...before,
        name: 'Fixed',
        redirect_uris: ['https://app.example/callback', 'https://app.example/other'],
        scopes: ['openid', 'read_user'],
      },
    ]);
    expect((await web.get(`/profile/applications/${before.id}`)).body).toContain(
      '<div class="flash flash-notice" role="status" id="flash-notice">The application was updated.</div>',
    );
    // The same client_id now authorizes with the corrected redirect URI, and not with the typo.
    const ok = await web.get(
      authorizeUrl(mine.clientId, { redirectUri: 'https://app.example/callback', scope: 'read_user' }),
    );
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('<strong>Fixed</strong> is requesting access to your account.');
    expect(
      (await web.get(authorizeUrl(mine.clientId, { redirectUri: 'https://app.example/calback' }))).statusCode,
    ).toBe(400);
    // The secret still authenticates the client (revoking an unknown token is 200 {} for a valid client).
    const revoke = await f.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: 'x', client_id: mine.clientId, client_secret: mine.secret }).toString(),
    });
    expect(revoke.statusCode).toBe(200);
    const wrong = await f.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: 'x', client_id: mine.clientId, client_secret: 'wrong' }).toString(),
    });
    expect(wrong.statusCode).toBe(401);

    // Bad input on edit: back to the form (303), the message at the field, what was typed kept, nothing changed.
    const bad = await web.post(`/profile/applications/${before.id}`, {
      authenticity_token: WebClient.csrf(form.body),
      [`${F}[name]`]: 'Still fixed',
      [`${F}[redirect_uri]`]: 'https://app.example/x#frag',
      [`${F}[scopes][]`]: 'api',
    });
    expectSeeOther(bad, `/profile/applications/${before.id}/edit`);
    const shownBad = await web.get(`/profile/applications/${before.id}/edit`);
    expect(fieldError(shownBad.body, 'app_redirect_uri')).toMatch(/^Redirect URIs must not contain a # fragment$/);
    expect(shownBad.body).toContain('value="Still fixed"');
    expect((await rows())[0].name).toBe('Fixed');
  });

  it("renews a secret (shown once on the application's page, the old one dead) and destroys, through confirm pages", async () => {
    const mine = await makeApp(f.db, { ownerId: aliceId });
    const { id } = (await rows())[0];
    const show = await web.get(`/profile/applications/${id}`);
    expect(show.body).toContain(
      `<div class="actions"><a class="button" href="/profile/applications/${id}/edit">Edit</a><a class="button" href="/profile/applications/${id}/renew_secret">Renew secret</a><a class="button danger" href="/profile/applications/${id}/delete">Destroy</a></div>`,
    );
    const confirm = await web.get(`/profile/applications/${id}/renew_secret`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain(`<form method="post" action="/profile/applications/${id}/renew_secret">`);
    expect((await rows())[0].secret_digest).toBe(sha256Hex(mine.secret));
    const renewed = await web.post(`/profile/applications/${id}/renew_secret`, {
      authenticity_token: WebClient.csrf(confirm.body),
    });
    expectSeeOther(renewed, `/profile/applications/${id}`);
    const secret = secretOf((await web.get(`/profile/applications/${id}`)).body)!;
    expect(secret).not.toBe(mine.secret);
    expect((await rows())[0].secret_digest).toBe(sha256Hex(secret));
    expect(secretOf((await web.get(`/profile/applications/${id}`)).body)).toBeUndefined();

    const destroy = await web.get(`/profile/applications/${id}/delete`);
    expect(destroy.body).toContain(`<form method="post" action="/profile/applications/${id}/delete">`);
    expect(await rows()).toHaveLength(1);
    const del = await web.post(`/profile/applications/${id}/delete`, {
      authenticity_token: WebClient.csrf(destroy.body),
    });
    expectSeeOther(del, '/profile/applications');
    expect(await rows()).toEqual([]);
    expect((await web.get(`/profile/applications/${id}`)).statusCode).toBe(404);
  });

  it("someone else's application (or none): 404 on every page and action, nothing changed", async () => {
    await makeApp(f.db, { name: 'Theirs' });
    const [theirs] = await rows();
    const token = WebClient.csrf((await web.get('/profile/applications')).body);
    for (const path of ['', '/edit', '/renew_secret', '/delete']) {
      const res = await web.get(`/profile/applications/${theirs.id}${path}`);
      expect({ path, status: res.statusCode }).toEqual({ path, status: 404 });
      expect(res.body).toContain('That application was not found.');
      expect(res.body).not.toContain(theirs.uid);
    }
    for (const path of ['', '/renew_secret', '/delete']) {
      const res = await web.post(`/profile/applications/${theirs.id}${path}`, {
        authenticity_token: token,
        [`${F}[name]`]: 'Mine now',
        [`${F}[redirect_uri]`]: 'https://evil.example/cb',
        [`${F}[scopes][]`]: 'api',
      });
      expect({ path, status: res.statusCode }).toEqual({ path, status: 404 });
    }
    expect((await web.get('/profile/applications/999999')).statusCode).toBe(404);
    expect(await rows()).toEqual([theirs]);
  });

  it('pages the list by 20, newest first', async () => {
    for (let i = 1; i <= 23; i++) await makeApp(f.db, { name: `App ${i}`, ownerId: aliceId });
    const names = (body: string) => [...body.matchAll(/<td data-label="Name"><a [^>]*>([^<]+)</g)].map((m) => m[1]);
    const first = await web.get('/profile/applications');
    expect(first.body).toContain('Your applications (23)');
    expect(names(first.body)).toHaveLength(20);
    expect(names(first.body)[0]).toBe('App 23');
    expect(first.body).toContain(
      '<nav class="pagination" aria-label="Applications pages"><span aria-current="page">Page 1 of 2</span><a href="/profile/applications?page=2" rel="next">Next</a></nav>',
    );
    expect(names((await web.get('/profile/applications?page=2')).body)).toEqual(['App 3', 'App 2', 'App 1']);
  });

  it('posts without a valid CSRF token change nothing (422)', async () => {
    await makeApp(f.db, { ownerId: aliceId });
    const [mine] = await rows();
    expect((await web.postRaw('/profile/applications', new URLSearchParams(valid()).toString())).statusCode).toBe(422);
    expect(
      (await web.post(`/profile/applications/${mine.id}/delete`, { authenticity_token: 'A'.repeat(43) })).statusCode,
    ).toBe(422);
    expect((await web.post(`/profile/applications/${mine.id}/renew_secret`, {})).statusCode).toBe(422);
    expect(
      (await web.post(`/profile/applications/${mine.id}`, { [`${F}[name]`]: 'B', [`${F}[scopes][]`]: 'api' }))
        .statusCode,
    ).toBe(422);
    expect(await rows()).toEqual([mine]);
  });

  it('signed out: redirected to sign in; posts too', async () => {
    const anon = new WebClient(f.app);
    for (const path of ['/profile/applications', '/profile/applications/new', '/profile/applications/1'])
      expect((await anon.get(path)).headers.location).toBe('/users/sign_in');
    expect((await anon.post('/profile/applications', {})).headers.location).toBe('/users/sign_in');
  });
});
