// /profile/applications: register, list, renew the secret, delete; the secret is shown once, on
// the page after the 303 (post/redirect/get); Renew and Destroy ask on a confirm page first.
import { beforeEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../service/domain/secrets';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let web: WebClient;
beforeEach(async () => {
  await resetDatabase(f.db, ['service_keys']);
  await makeUser(f.db, 'alice');
  web = new WebClient(f.app);
  await web.signIn('alice', PASSWORD);
});

const F = 'doorkeeper_application';
const secretOf = (html: string) => /id="application-secret">([^<]+)</.exec(html)?.[1];

describe('/profile/applications', () => {
  it('offers "Require DPoP" (RFC 9449 dpop_bound_access_tokens), off by default, and stores it when checked', async () => {
    const page = await web.get('/profile/applications');
    const input = /<input[^>]*id="app_dpop_bound_access_tokens"[^>]*>/.exec(page.body)?.[0];
    expect(input).toContain(`name="${F}[dpop_bound_access_tokens]"`);
    expect(input).not.toContain('checked');
    const post = (name: string, dpop?: string) =>
      web.postRaw(
        '/profile/applications',
        new URLSearchParams([
          ['authenticity_token', WebClient.csrf(page.body)],
          [`${F}[name]`, name],
          [`${F}[redirect_uri]`, 'https://app.example/cb'],
          [`${F}[scopes][]`, 'read_user'],
          ...(dpop ? [[`${F}[dpop_bound_access_tokens]`, dpop] as [string, string]] : []),
        ] as [string, string][]).toString(),
      );
    expect((await post('Bound', '1')).statusCode).toBe(303);
    expect((await post('Plain')).statusCode).toBe(303);
    const rows = await f.db
      .selectFrom('oauth_applications')
      .select(['name', 'dpop_bound_access_tokens'])
      .orderBy('id')
      .execute();
    expect(rows).toEqual([
      { name: 'Bound', dpop_bound_access_tokens: true },
      { name: 'Plain', dpop_bound_access_tokens: false },
    ]);
  });

  it('registers an application and shows its secret once, stored only as a digest', async () => {
    const page = await web.get('/profile/applications');
    expect(page.statusCode).toBe(200);
    const res = await web.postRaw(
      '/profile/applications',
      new URLSearchParams([
        ['authenticity_token', WebClient.csrf(page.body)],
        [`${F}[name]`, 'My <script>alert(1)</script> app'],
        [`${F}[redirect_uri]`, 'https://app.example/cb\nhttp://127.0.0.1:9000/cb'],
        [`${F}[post_logout_redirect_uri]`, 'https://app.example/bye\n https://app.example/bye '],
        [`${F}[backchannel_logout_uri]`, ' https://app.example/backchannel '],
        [`${F}[backchannel_logout_session_required]`, '1'],
        [`${F}[scopes][]`, 'read_user'],
        [`${F}[scopes][]`, 'api'],
        [`${F}[confidential]`, '1'],
      ]).toString(),
    );
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/profile/applications');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toBe('');
    const shown = await web.get('/profile/applications');
    expect(shown.body).toContain(
      '<div class="flash flash-notice" role="status" id="flash-notice">The application was created.</div>',
    );
    const secret = secretOf(shown.body)!;
    expect(secret).toMatch(/^gloas-[0-9a-f]{64}$/);
    expect(shown.body).not.toContain('<script>alert(1)</script>');
    expect(shown.body).toContain('My &lt;script&gt;alert(1)&lt;/script&gt; app');
    const row = await f.db
      .selectFrom('oauth_applications')
      .select([
        'uid',
        'secret_digest',
        'redirect_uris',
        'post_logout_redirect_uris',
        'backchannel_logout_uri',
        'backchannel_logout_session_required',
        'scopes',
        'confidential',
        'owner_id',
        'trusted',
      ])
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      secret_digest: sha256Hex(secret),
      redirect_uris: ['https://app.example/cb', 'http://127.0.0.1:9000/cb'],
      post_logout_redirect_uris: ['https://app.example/bye'],
      backchannel_logout_uri: 'https://app.example/backchannel',
      backchannel_logout_session_required: true,
      scopes: ['api', 'read_user'],
      confidential: true,
      trusted: false,
    });
    // Listed afterwards (a reload), without the secret or the message.
    const list = await web.get('/profile/applications');
    expect(list.body).not.toContain('flash-notice');
    expect(list.body).toContain(row.uid);
    expect(secretOf(list.body)).toBeUndefined();
    expect(list.body).not.toContain(secret);
  });

  it('refuses invalid input with the form again (422): no scopes, bad redirect URI', async () => {
    const page = await web.get('/profile/applications');
    const token = WebClient.csrf(page.body);
    const noScopes = await web.post('/profile/applications', {
      authenticity_token: token,
      [`${F}[name]`]: 'A',
      [`${F}[redirect_uri]`]: 'https://a.example/cb',
    });
    expect(noScopes.statusCode).toBe(422);
    expect(noScopes.body).toContain('scopes must not be empty');
    const bad = await web.post('/profile/applications', {
      authenticity_token: token,
      [`${F}[name]`]: 'A',
      [`${F}[redirect_uri]`]: 'javascript:alert(1)',
      [`${F}[scopes][]`]: 'api',
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('forbidden scheme');
    expect(await f.db.selectFrom('oauth_applications').select('id').execute()).toEqual([]);
  });

  it('shows each refusal at the field the domain error names (issue 21: not by the words of its message)', async () => {
    const page = await web.get('/profile/applications');
    const token = WebClient.csrf(page.body);
    const fieldError = (body: string, id: string) =>
      new RegExp(`id="${id}-error"><span class="visually-hidden">Error: </span>([^<]*)<`).exec(body)?.[1];
    const cases: Array<[Record<string, string>, string, string]> = [
      [{ [`${F}[name]`]: ' ' }, 'app_name', 'name must not be empty'],
      [{ [`${F}[name]`]: 'x'.repeat(256) }, 'app_name', 'name is too long (maximum is 255 characters)'],
      // Its message holds the word "scope": once shown at the scopes.
      [
        { [`${F}[redirect_uri]`]: 'javascript:scope()' },
        'app_redirect_uri',
        'redirect URI &quot;javascript:scope()&quot; uses a forbidden scheme (javascript:)',
      ],
      [
        { [`${F}[post_logout_redirect_uri]`]: 'https://app.example/bye#top' },
        'app_post_logout_redirect_uri',
        'redirect URI &quot;https://app.example/bye#top&quot; must not contain a fragment',
      ],
      [
        { [`${F}[backchannel_logout_uri]`]: 'ftp://app.example/bcl' },
        'app_backchannel_logout_uri',
        'back-channel logout URI &quot;ftp://app.example/bcl&quot; must use http or https',
      ],
      [
        { [`${F}[backchannel_logout_uri]`]: 'https://app.example/bcl#x' },
        'app_backchannel_logout_uri',
        'back-channel logout URI &quot;https://app.example/bcl#x&quot; must not contain a fragment',
      ],
      [
        { [`${F}[scopes][]`]: 'nope' },
        'app_scopes',
        'unknown scope: nope (choose from: api, read_api, read_user, openid, profile, email, notify)',
      ],
    ];
    for (const [values, id, message] of cases) {
      const res = await web.post('/profile/applications', {
        authenticity_token: token,
        [`${F}[name]`]: 'A',
        [`${F}[redirect_uri]`]: 'https://a.example/cb',
        [`${F}[scopes][]`]: 'api',
        ...values,
      });
      expect({ id, status: res.statusCode, message: fieldError(res.body, id) }).toEqual({ id, status: 422, message });
    }
    expect(await f.db.selectFrom('oauth_applications').select('id').execute()).toEqual([]);
  });

  it("renews a secret (the old one stops working) and deletes; only the owner's applications", async () => {
    const mine = await makeApp(f.db, {
      ownerId: (await f.db.selectFrom('users').select('id').executeTakeFirstOrThrow()).id,
    });
    const theirs = await makeApp(f.db, { name: 'Theirs' });
    const page = await web.get('/profile/applications');
    expect(page.body).toContain(mine.clientId);
    expect(page.body).not.toContain(theirs.clientId);
    const token = WebClient.csrf(page.body);

    // The confirm page changes nothing; its button posts.
    const confirm = await web.get(`/profile/applications/${mine.clientId}/renew_secret`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain(`<form method="post" action="/profile/applications/${mine.clientId}/renew_secret">`);
    expect(
      (
        await f.db
          .selectFrom('oauth_applications')
          .select('secret_digest')
          .where('uid', '=', mine.clientId)
          .executeTakeFirstOrThrow()
      ).secret_digest,
    ).toBe(sha256Hex(mine.secret));
    const renewed = await web.post(`/profile/applications/${mine.clientId}/renew_secret`, {
      authenticity_token: token,
    });
    expect(renewed.statusCode).toBe(303);
    expect(renewed.headers.location).toBe('/profile/applications');
    const secret = secretOf((await web.get('/profile/applications')).body)!;
    expect(secret).not.toBe(mine.secret);
    const digest = (
      await f.db
        .selectFrom('oauth_applications')
        .select('secret_digest')
        .where('uid', '=', mine.clientId)
        .executeTakeFirstOrThrow()
    ).secret_digest;
    expect(digest).toBe(sha256Hex(secret));

    const theirDigest = () =>
      f.db
        .selectFrom('oauth_applications')
        .select('secret_digest')
        .where('uid', '=', theirs.clientId)
        .executeTakeFirstOrThrow();
    const theirsBefore = await theirDigest();
    const theirDelete = await web.post(`/profile/applications/${theirs.clientId}/delete`, {
      authenticity_token: token,
    });
    expect(theirDelete.statusCode).toBe(404);
    expect(theirDelete.body).toContain('That application was not found.');
    expect((await web.get(`/profile/applications/${theirs.clientId}/delete`)).statusCode).toBe(404);
    const theirRenew = await web.post(`/profile/applications/${theirs.clientId}/renew_secret`, {
      authenticity_token: token,
    });
    expect(theirRenew.statusCode).toBe(404);
    expect(theirRenew.body).toContain('That application was not found.');
    // Someone else's application: neither renewed nor deleted.
    expect(await theirDigest()).toEqual(theirsBefore);
    const del = await web.post(`/profile/applications/${mine.clientId}/delete`, { authenticity_token: token });
    expect(del.statusCode).toBe(303);
    expect(del.headers.location).toBe('/profile/applications');
    expect((await f.db.selectFrom('oauth_applications').select('uid').execute()).map((r) => r.uid)).toEqual([
      theirs.clientId,
    ]);
  });

  it('posts without a valid CSRF token change nothing (422)', async () => {
    const mine = await makeApp(f.db, {
      ownerId: (await f.db.selectFrom('users').select('id').executeTakeFirstOrThrow()).id,
    });
    expect(
      (
        await web.post('/profile/applications', {
          [`${F}[name]`]: 'A',
          [`${F}[redirect_uri]`]: 'https://a.example/cb',
          [`${F}[scopes][]`]: 'api',
        })
      ).statusCode,
    ).toBe(422);
    expect(
      (await web.post(`/profile/applications/${mine.clientId}/delete`, { authenticity_token: 'A'.repeat(43) }))
        .statusCode,
    ).toBe(422);
    expect((await web.post(`/profile/applications/${mine.clientId}/renew_secret`, {})).statusCode).toBe(422);
    expect(await f.db.selectFrom('oauth_applications').select('uid').execute()).toHaveLength(1);
  });

  it('signed out: redirected to sign in; posts too', async () => {
    const anon = new WebClient(f.app);
    expect((await anon.get('/profile/applications')).headers.location).toBe('/users/sign_in');
    expect((await anon.post('/profile/applications', {})).headers.location).toBe('/users/sign_in');
  });
});
