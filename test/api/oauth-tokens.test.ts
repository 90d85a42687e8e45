// /api/v4 with tokens from the real token endpoint (POST /oauth/token), not fixtures: the password
// grant's token works with a GitLab client, its scope is enforced, and revocation through
// POST /oauth/revoke is seen by the API at once.
import { Gitlab } from '@gitbeaker/rest';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import { registerApplication } from '../../service/domain/applications';
import { listen, makeUser, TEST_PASSWORD } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let host: string;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
  host = await listen(app);
  await makeUser(db, 'alice');
});

async function passwordGrant(form: Record<string, string>): Promise<{ access_token: string; scope: string }> {
  const res = await fetch(`${host}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username: 'alice', password: TEST_PASSWORD, ...form }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; scope: string };
}

describe('tokens from POST /oauth/token', () => {
  it('a password-grant token (read_user) shows the current user through @gitbeaker/rest, and nothing more', async () => {
    const { access_token, scope } = await passwordGrant({ scope: 'read_user' });
    expect(scope).toBe('read_user');
    const api = new Gitlab({ host, oauthToken: access_token });
    expect(await api.Users.showCurrentUser()).toMatchObject({ username: 'alice', email: 'alice@example.com' });
    const res = await fetch(`${host}/api/v4/notification_settings`, {
      headers: { authorization: `Bearer ${access_token}` },
    });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      error: 'insufficient_scope',
      error_description: 'The request requires higher privileges than provided by the access token.',
      scope: 'api read_api',
    });
  });

  it('an application-bound api token edits notification settings; revoking it takes effect at once', async () => {
    const { application, secret } = await registerApplication(db, {
      name: 'CLI',
      redirectUris: ['http://127.0.0.1/cb'],
      scopes: 'api read_user',
    });
    const { access_token, scope } = await passwordGrant({ client_id: application.uid, client_secret: secret });
    expect(scope).toBe('api read_user');
    const api = new Gitlab({ host, oauthToken: access_token });
    expect(await api.NotificationSettings.edit({ level: 'watch' })).toEqual({
      level: 'watch',
      notification_email: 'alice@example.com',
    });

    const revoke = await fetch(`${host}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: access_token, client_id: application.uid, client_secret: secret }),
    });
    expect(revoke.status).toBe(200);
    const res = await fetch(`${host}/api/v4/user?access_token=${access_token}`);
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({
      error: 'invalid_token',
      error_description: 'Token was revoked. You have to re-authorize from the user.',
    });
  });
});
