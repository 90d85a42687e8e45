// The Sudo header and ?sudo= (contract §1, GitLab's sudo!): administrators' tokens with the sudo
// scope act as the named user (id or username); everyone else gets GitLab's exact errors.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, User } from '../../service/db/schema';
import { createPersonalAccessToken } from '../../service/domain/personal-access-tokens';
import { makeOAuthToken, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let root: User;
let alice: User;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
  root = await makeUser(db, 'root', { admin: true });
  alice = await makeUser(db, 'alice');
  await makeUser(db, 'blocky', { blocked: true });
});

const call = (token: string, headers: Record<string, string> = {}, url = '/api/v4/user') =>
  app.inject({ url, headers: { 'private-token': token, ...headers } });

describe('Sudo', () => {
  it('an admin token with the sudo scope acts as the user named by username (any case) or id', async () => {
    const token = await makePat(db, root, ['api', 'sudo']);
    for (const [headers, url] of [
      [{ sudo: 'alice' }, '/api/v4/user'],
      [{ sudo: 'ALICE' }, '/api/v4/user'],
      [{ sudo: String(alice.id) }, '/api/v4/user'],
      [{}, '/api/v4/user?sudo=alice'],
    ] as const) {
      const res = await call(token, headers, url);
      expect([res.statusCode, res.headers['content-type'], res.json().username, res.json().is_admin]).toEqual([
        200,
        'application/json',
        'alice',
        undefined,
      ]);
    }
    // What alice sets through sudo is alice's.
    const put = await app.inject({
      method: 'PUT',
      url: '/api/v4/notification_settings?level=watch',
      headers: { 'private-token': token, sudo: 'alice' },
    });
    expect(put.json()).toEqual({ level: 'watch', notification_email: 'alice@example.com' });
    expect((await call(await makePat(db, alice, ['api']), {}, '/api/v4/notification_settings')).json().level).toBe(
      'watch',
    );
    expect((await call(token, {}, '/api/v4/notification_settings')).json().level).toBe('participating');
    // OAuth tokens too, as GitLab.
    const oauth = await makeOAuthToken(db, root, ['read_user', 'sudo']);
    const res = await app.inject({ url: '/api/v4/user', headers: { authorization: `Bearer ${oauth}`, sudo: 'alice' } });
    expect([res.statusCode, res.json().username]).toEqual([200, 'alice']);
  });

  it('a non-admin token: 403 "Must be admin to use sudo", even with the sudo scope', async () => {
    for (const scopes of [['api'], ['api', 'sudo']]) {
      const res = await call(await makePat(db, alice, scopes), { sudo: 'root' });
      expect([res.statusCode, res.headers['content-type'], res.body]).toEqual([
        403,
        'application/json',
        '{"message":"403 Forbidden - Must be admin to use sudo"}',
      ]);
    }
  });

  it('an admin token without the sudo scope: 403 insufficient_scope naming sudo', async () => {
    const res = await call(await makePat(db, root, ['api']), { sudo: 'alice' });
    expect([res.statusCode, res.json()]).toEqual([
      403,
      {
        error: 'insufficient_scope',
        error_description: 'The request requires higher privileges than provided by the access token.',
        scope: 'sudo',
      },
    ]);
  });

  it('an unknown user: 404 "User with ID or username \'x\' Not Found"; a blocked one: 403', async () => {
    const token = await makePat(db, root, ['api', 'sudo']);
    for (const who of ['nobody', '999999', 'a'.repeat(300)]) {
      const res = await call(token, { sudo: who });
      expect([res.statusCode, res.json()]).toEqual([
        404,
        { message: `404 User with ID or username '${who}' Not Found` },
      ]);
    }
    const blocked = await call(token, { sudo: 'blocky' });
    expect([blocked.statusCode, blocked.json()]).toEqual([403, { message: '403 Forbidden' }]);
    const repeated = await call(token, {}, '/api/v4/user?sudo=alice&sudo=root');
    expect([repeated.statusCode, repeated.json()]).toEqual([400, { error: 'sudo is invalid' }]);
  });

  it("the sudo scope is for administrators' personal access tokens only", async () => {
    await expect(createPersonalAccessToken(db, { username: 'alice', name: 'x', scopes: 'api sudo' })).rejects.toThrow(
      'the sudo scope is for administrators only',
    );
    const { record } = await createPersonalAccessToken(db, { username: 'root', name: 'x', scopes: 'sudo api' });
    expect(record.scopes).toEqual(['api', 'sudo']);
  });
});
