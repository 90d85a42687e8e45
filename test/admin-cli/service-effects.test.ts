// What operators rely on after a rotation, checked against the real app: `apps rotate-secret`
// makes the old client secret fail at /oauth/token at once (401 invalid_client) while the new one
// works; `secrets rotate session-key` signs nobody out, also on an instance that loads the new ring.
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { WebClient, obtainCode } from '../oauth/support/browser-like';
import { basic, FORM, form, REDIRECT_URI, useFixture } from '../oauth/support/harness';
import { runIn } from './support';

const f = useFixture();
const PASSWORD = 'correct horse battery staple';
const INVALID_CLIENT = {
  error: 'invalid_client',
  error_description:
    'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
};

const signedInAs = async (web: WebClient) => {
  const res = await web.get('/profile/applications');
  return res.statusCode === 200 ? /id="signed-in-user">([^<]+)</.exec(res.body)?.[1] : `status ${res.statusCode}`;
};

async function createUser(username: string) {
  const res = await runIn(
    f.db,
    ['users', 'create', '--username', username, '--email', `${username}@example.com`, '--password-stdin', '--json'],
    { stdin: PASSWORD },
  );
  expect(res.code).toBe(0);
}

describe('after apps rotate-secret', () => {
  it('the old secret gets 401 invalid_client at /oauth/token, the new one works', async () => {
    await createUser('alice');
    const app = (
      await runIn(f.db, [
        'apps',
        'register',
        '--name',
        'Rotating',
        '--redirect-uri',
        REDIRECT_URI,
        '--scopes',
        'api read_user',
        '--json',
      ])
    ).json;
    const web = new WebClient(f.app);
    expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
    const token = (values: Record<string, string>, headers: Record<string, string> = {}) =>
      f.app.inject({ method: 'POST', url: '/oauth/token', payload: form(values), headers: { ...FORM, ...headers } });

    // Before: the secret works.
    const before = await token(
      { grant_type: 'authorization_code', code: await obtainCode(web, app.application_id), redirect_uri: REDIRECT_URI },
      { authorization: basic(app.application_id, app.secret) },
    );
    expect(before.statusCode).toBe(200);

    const code = await obtainCode(web, app.application_id);
    const rotated = await runIn(f.db, ['apps', 'rotate-secret', app.application_id, '--json']);
    expect(rotated.code).toBe(0);

    const oldBasic = await token(
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
      { authorization: basic(app.application_id, app.secret) },
    );
    expect(oldBasic.statusCode).toBe(401);
    expect(oldBasic.headers['www-authenticate']).toMatch(/^Basic realm="/);
    expect(oldBasic.json()).toEqual(INVALID_CLIENT);
    const oldBody = await token({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: app.application_id,
      client_secret: app.secret,
    });
    expect(oldBody.statusCode).toBe(401);
    expect(oldBody.json()).toEqual(INVALID_CLIENT);

    // The failed attempts did not consume the code: the new secret redeems it.
    const fresh = await token(
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
      { authorization: basic(app.application_id, rotated.json.secret) },
    );
    expect(fresh.statusCode).toBe(200);
    expect(fresh.json()).toMatchObject({
      token_type: 'bearer',
      scope: 'api read_user',
      access_token: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });
});

describe('after secrets rotate session-key', () => {
  it('an existing signed-in session still works, here and on an instance that loads the new ring', async () => {
    await createUser('bob');
    const web = new WebClient(f.app);
    expect((await web.signIn('bob', PASSWORD)).statusCode).toBe(302);
    expect(await signedInAs(web)).toBe('bob');
    const cookieBefore = web.cookies.get('_lanyard_session');
    // A form rendered before the rotation (its CSRF token signed with the old key).
    const formPage = await web.get('/profile/applications');

    const res = await runIn(f.db, ['secrets', 'rotate', 'session-key', '--json']);
    expect(res.json).toEqual({ rotated: true });

    expect(await signedInAs(web)).toBe('bob');
    // A new instance (a cold Lambda, a restarted server) reads the rotated ring from the database.
    const restarted = await buildApp({ db: f.db, config: f.config, logger: false });
    try {
      const sameBrowser = new WebClient(restarted);
      sameBrowser.cookies = new Map(web.cookies);
      expect(sameBrowser.cookies.get('_lanyard_session')).toBe(cookieBefore);
      expect(await signedInAs(sameBrowser)).toBe('bob');
      // The pre-rotation CSRF token is still accepted: registering an application from that form works.
      const created = await sameBrowser.post('/profile/applications', {
        authenticity_token: WebClient.csrf(formPage.body),
        'doorkeeper_application[name]': 'After rotation',
        'doorkeeper_application[redirect_uri]': 'https://after.example/cb',
        'doorkeeper_application[scopes][]': 'read_user',
        'doorkeeper_application[confidential]': '1',
      });
      expect(created.statusCode, created.body.slice(0, 300)).toBe(303);
      expect(
        await f.db
          .selectFrom('oauth_applications')
          .select('name')
          .where('name', '=', 'After rotation')
          .executeTakeFirst(),
      ).toEqual({ name: 'After rotation' });
      // New sign-ins are signed with the new key and work on both instances.
      const newcomer = new WebClient(restarted);
      expect((await newcomer.signIn('bob', PASSWORD)).statusCode).toBe(302);
      expect(newcomer.cookies.get('_lanyard_session')?.split('.')[1]).not.toBe(cookieBefore?.split('.')[1]);
      expect(await signedInAs(newcomer)).toBe('bob');
    } finally {
      await restarted.close();
    }
  });
});
