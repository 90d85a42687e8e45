// The API driven by an unmodified GitLab client library (@gitbeaker/rest) against a real HTTP
// server on 127.0.0.1:0: if GitLab clients work against Lambda's wire format, so will others.
import { Gitlab, GitbeakerRequestError } from '@gitbeaker/rest';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, Project, User } from '../../service/db/schema';
import { NOTIFICATION_EVENTS } from '../../service/db/schema';
import { addUserEmail } from '../../service/domain/users';
import {
  addMember,
  createGroup,
  createProject,
  listen,
  makeOAuthToken,
  makePat,
  makeUser,
} from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let host: string;
let alice: User;
let group: Group;
let project: Project;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
  host = await listen(app);
  alice = await makeUser(db, 'alice', { admin: false });
  await addUserEmail(db, 'alice', 'alice.work@example.com');
  await createGroup(db, { path: 'my-group', visibility: 'private' });
  group = await createGroup(db, { path: 'sub', parent: 'my-group', visibility: 'private' });
  project = await createProject(db, { path: 'my-group/sub/my-project', visibility: 'private' });
  await addMember(db, { group: 'my-group', username: 'alice', access: 'developer' });
});

/**
 * A GitbeakerRequestError as a client sees it: the status, and the description gitbeaker takes
 * from the JSON body (`error`, else `message`, objects JSON-encoded). Exact bodies are asserted
 * in the other files of test/api.
 */
async function failure(promise: Promise<unknown>): Promise<{ status: number; description: string }> {
  const err = await promise.then(
    () => expect.unreachable('request should fail'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GitbeakerRequestError);
  const cause = (err as GitbeakerRequestError).cause as { description: string; response: Response };
  expect(cause.response.headers.get('content-type')).toBe('application/json');
  return { status: cause.response.status, description: cause.description };
}

describe('Users.showCurrentUser()', () => {
  it('with an OAuth token', async () => {
    const api = new Gitlab({ host, oauthToken: await makeOAuthToken(db, alice, ['read_user']) });
    const me = await api.Users.showCurrentUser();
    expect(me).toMatchObject({
      id: alice.id,
      username: 'alice',
      email: 'alice@example.com',
      state: 'active',
      web_url: 'http://127.0.0.1:3000/alice',
      identities: [],
    });
    expect(me).not.toHaveProperty('is_admin');
  });

  it('with a personal access token', async () => {
    const api = new Gitlab({ host, token: await makePat(db, alice, ['read_api']) });
    const me = await api.Users.showCurrentUser();
    expect(me.username).toBe('alice');
    expect(me.created_at).toBe(alice.created_at.toISOString());
  });

  it('an admin sees is_admin', async () => {
    const root = await makeUser(db, 'root', { admin: true });
    const api = new Gitlab({ host, token: await makePat(db, root, ['api']) });
    expect(await api.Users.showCurrentUser()).toMatchObject({ username: 'root', is_admin: true });
  });

  it('errors arrive as GitLab clients expect them', async () => {
    expect(await failure(new Gitlab({ host, token: 'glpat-wrong-wrong-wrong-wrong' }).Users.showCurrentUser())).toEqual(
      { status: 401, description: '401 Unauthorized' },
    );
    const expired = await makeOAuthToken(db, alice, ['api'], { expiresAt: new Date(Date.now() - 1) });
    expect(await failure(new Gitlab({ host, oauthToken: expired }).Users.showCurrentUser())).toEqual({
      status: 401,
      description: 'invalid_token',
    });
  });
});

describe('NotificationSettings', () => {
  it('show/edit globally, including level custom with events and a verified e-mail', async () => {
    const api = new Gitlab({ host, oauthToken: await makeOAuthToken(db, alice, ['api']) });
    expect(await api.NotificationSettings.show()).toEqual({
      level: 'participating',
      notification_email: 'alice@example.com',
    });
    const edited = await api.NotificationSettings.edit({
      level: 'custom',
      notificationEmail: 'alice.work@example.com',
      newNote: true,
      mergeMergeRequest: true,
    });
    expect(edited).toEqual({
      level: 'custom',
      events: {
        ...Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, false])),
        new_note: true,
        merge_merge_request: true,
      },
      notification_email: 'alice.work@example.com',
    });
    expect(await api.NotificationSettings.show()).toEqual(edited);
    expect(await failure(api.NotificationSettings.edit({ notificationEmail: 'mallory@example.com' }))).toEqual({
      status: 400,
      description: '{"notification_email":["must be an email you have verified"]}',
    });
    expect(await failure(api.NotificationSettings.edit({ level: 'loud' }))).toEqual({
      status: 400,
      description: "'loud' is not a valid level",
    });
    expect(await api.NotificationSettings.show()).toEqual(edited);
  });

  it('show/edit by groupId, numeric and full path (through nested groups)', async () => {
    const api = new Gitlab({ host, token: await makePat(db, alice, ['api']) });
    expect(await api.NotificationSettings.show({ groupId: group.id })).toEqual({ level: 'global' });
    expect(await api.NotificationSettings.edit({ groupId: 'my-group/sub', level: 'watch' })).toEqual({
      level: 'watch',
    });
    expect(await api.NotificationSettings.show({ groupId: group.id })).toEqual({ level: 'watch' });
    const custom = await api.NotificationSettings.edit({ groupId: group.id, level: 'custom', failedPipeline: true });
    expect(custom).toEqual({
      level: 'custom',
      events: { ...Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, false])), failed_pipeline: true },
    });
    expect(await api.NotificationSettings.show({ groupId: 'my-group/sub' })).toEqual(custom);
  });

  it('show/edit by projectId, numeric and full path', async () => {
    const api = new Gitlab({ host, token: await makePat(db, alice, ['api']) });
    expect(await api.NotificationSettings.show({ projectId: 'my-group/sub/my-project' })).toEqual({ level: 'global' });
    const custom = await api.NotificationSettings.edit({
      projectId: project.id,
      level: 'custom',
      newIssue: true,
      successPipeline: false,
    });
    expect(custom).toEqual({
      level: 'custom',
      events: { ...Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, false])), new_issue: true },
    });
    expect(await api.NotificationSettings.show({ projectId: 'my-group/sub/my-project' })).toEqual(custom);
    expect(await api.NotificationSettings.edit({ projectId: 'my-group/sub/my-project', level: 'disabled' })).toEqual({
      level: 'disabled',
    });
  });

  it('404 for a group or project the user cannot see, like a missing one', async () => {
    const bob = await makeUser(db, 'bob');
    const api = new Gitlab({ host, token: await makePat(db, bob, ['api']) });
    expect(await failure(api.NotificationSettings.show({ groupId: 'my-group/sub' }))).toEqual({
      status: 404,
      description: '404 Group Not Found',
    });
    expect(await failure(api.NotificationSettings.show({ groupId: 'my-group/nope' }))).toEqual({
      status: 404,
      description: '404 Group Not Found',
    });
    expect(await failure(api.NotificationSettings.edit({ projectId: project.id, level: 'watch' }))).toEqual({
      status: 404,
      description: '404 Project Not Found',
    });
  });

  it('a read_api token can show but not edit', async () => {
    const api = new Gitlab({ host, token: await makePat(db, alice, ['read_api']) });
    expect((await api.NotificationSettings.show()).level).toBeDefined();
    expect(await failure(api.NotificationSettings.edit({ level: 'watch' }))).toEqual({
      status: 403,
      description: 'insufficient_scope',
    });
  });
});

describe('§4 errors on the wire (plain fetch against the same server)', () => {
  it('exact status, Content-Type and body', async () => {
    const carol = await makeUser(db, 'carol', { blocked: true });
    const cases: Array<[string, RequestInit, number, unknown]> = [
      ['/api/v4/user', {}, 401, { message: '401 Unauthorized' }],
      [
        '/api/v4/user',
        { headers: { 'private-token': 'glpat-nope-nope-nope-nope' } },
        401,
        { message: '401 Unauthorized' },
      ],
      [
        '/api/v4/user',
        {
          headers: {
            authorization: `Bearer ${await makeOAuthToken(db, alice, ['api'], { expiresAt: new Date(Date.now() - 1) })}`,
          },
        },
        401,
        {
          error: 'invalid_token',
          error_description: 'Token is expired. You can either do re-authorization or token refresh.',
        },
      ],
      [
        `/api/v4/user?private_token=${await makePat(db, alice, ['api'], { revoked: true })}`,
        {},
        401,
        { error: 'invalid_token', error_description: 'Token was revoked. You have to re-authorize from the user.' },
      ],
      [
        '/api/v4/notification_settings',
        { method: 'PUT', headers: { 'private-token': await makePat(db, alice, ['read_user']) } },
        403,
        {
          error: 'insufficient_scope',
          error_description: 'The request requires higher privileges than provided by the access token.',
          scope: 'api',
        },
      ],
      [
        '/api/v4/user',
        { headers: { 'private-token': await makePat(db, carol, ['api']) } },
        403,
        { message: '403 Forbidden' },
      ],
      [
        '/api/v4/projects/1/nope',
        { headers: { 'private-token': await makePat(db, alice, ['api']) } },
        404,
        { error: '404 Not Found' },
      ],
    ];
    for (const [path, init, status, body] of cases) {
      const res = await fetch(`${host}${path}`, init);
      expect([path, res.status, res.headers.get('content-type'), await res.json()]).toEqual([
        path,
        status,
        'application/json',
        body,
      ]);
    }
  });
});
