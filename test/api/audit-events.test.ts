// The instance audit events API (GitLab's GET /audit_events and /audit_events/:id): GitLab's
// AuditEvent shape mapped from Lanyard's trail, its filters, pagination and errors; and every
// change made through the API audited like the same change through a page or the CLI —
// notification settings included, on each of its three paths, and never for a refused change.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, Project, User } from '../../service/db/schema';
import { recordAudit } from '../../service/domain/audit';
import { createGroup, createProject, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let root: User;
let alice: User;
let bob: User;
let group: Group;
let project: Project;
let rootToken: string;
let aliceToken: string;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
  root = await makeUser(db, 'root', { admin: true });
  alice = await makeUser(db, 'alice');
  bob = await makeUser(db, 'bob');
  group = await createGroup(db, { path: 'team', visibility: 'public' });
  project = await createProject(db, { path: 'team/app', visibility: 'public' });
  rootToken = await makePat(db, root, ['api']);
  aliceToken = await makePat(db, alice, ['api']);
});

const get = (url: string, token = rootToken) =>
  app.inject({ url: `/api/v4${url}`, headers: { 'private-token': token } });
const send = (method: 'POST' | 'PUT', url: string, token: string, payload?: Record<string, unknown>) =>
  app.inject({ method, url: `/api/v4${url}`, headers: { 'private-token': token }, ...(payload ? { payload } : {}) });

const lastEventId = async () =>
  Number(
    (
      await db
        .selectFrom('audit_events')
        .select((eb) => eb.fn.max('id').as('id'))
        .executeTakeFirstOrThrow()
    ).id,
  );

const createdAt = async (id: number) =>
  (
    await db.selectFrom('audit_events').select('created_at').where('id', '=', id).executeTakeFirstOrThrow()
  ).created_at.toISOString();

describe('GET /audit_events', () => {
  it("maps a user's change through the API to GitLab's shape: author, entity, details", async () => {
    expect((await send('POST', `/users/${bob.id}/block`, rootToken)).statusCode).toBe(201);
    const id = await lastEventId();
    const res = await get(`/audit_events/${id}`);
    expect([res.statusCode, res.headers['content-type'], res.json()]).toEqual([
      200,
      'application/json',
      {
        id,
        author_id: root.id,
        entity_id: bob.id,
        entity_type: 'User',
        details: {
          event_name: 'user.block',
          author_name: 'root',
          author_email: 'root@example.com',
          target_id: bob.id,
          target_type: 'User',
          target_details: 'bob',
          ip_address: '127.0.0.1',
          entity_path: 'bob',
        },
        created_at: await createdAt(id),
      },
    ]);
  });

  it("a token's events belong to its owner; the CLI and the service have no author (-1) and the instance as entity", async () => {
    const created = await send('POST', `/users/${alice.id}/personal_access_tokens`, rootToken, {
      name: 'deploy',
      scopes: ['read_api'],
    });
    const tokenId = created.json().id;
    const patEvent = await lastEventId();
    await recordAudit(db, { actor: 'cli:ops', action: 'service_key.rotate', targetType: 'service_key', targetId: 7 });
    const cliEvent = await lastEventId();
    const res = await get('/audit_events?per_page=2');
    expect(res.json()).toEqual([
      {
        id: cliEvent,
        author_id: -1,
        entity_id: 1,
        entity_type: 'Gitlab::Audit::InstanceScope',
        details: {
          event_name: 'service_key.rotate',
          author_name: 'cli:ops',
          target_id: 7,
          target_type: 'ServiceKey',
          target_details: '7',
          ip_address: null,
          entity_path: 'gitlab_instance',
        },
        created_at: await createdAt(cliEvent),
      },
      {
        id: patEvent,
        author_id: root.id,
        entity_id: alice.id,
        entity_type: 'User',
        details: {
          user: 'alice',
          name: 'deploy',
          scopes: ['read_api'],
          event_name: 'personal_access_token.create',
          author_name: 'root',
          author_email: 'root@example.com',
          target_id: tokenId,
          target_type: 'PersonalAccessToken',
          target_details: 'deploy',
          ip_address: '127.0.0.1',
          entity_path: 'alice',
        },
        created_at: await createdAt(patEvent),
      },
    ]);
    const total = Number(
      (
        await db
          .selectFrom('audit_events')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect([res.headers['x-total'], res.headers['x-per-page'], res.headers['x-next-page']]).toEqual([
      String(total),
      '2',
      '2',
    ]);
  });

  it('filters: entity_type and entity_id, created_after and created_before; GitLab’s 400s', async () => {
    const bobs = (await get(`/audit_events?entity_type=User&entity_id=${bob.id}`)).json();
    expect(bobs.map((e: { details: { event_name: string } }) => e.details.event_name)).toEqual([
      'user.block',
      'user.create',
    ]);
    const instance = (await get('/audit_events?entity_type=Gitlab::Audit::InstanceScope')).json();
    expect(instance.map((e: { details: { event_name: string } }) => e.details.event_name)).toEqual([
      'service_key.rotate',
    ]);
    expect((await get('/audit_events?created_after=2999-01-01T00:00:00Z')).json()).toEqual([]);
    expect((await get('/audit_events?created_before=2000-01-01')).json()).toEqual([]);
    const all = (await get('/audit_events?per_page=100')).json();
    expect((await get('/audit_events?created_after=2000-01-01&per_page=100')).json()).toEqual(all);
    for (const [query, error] of [
      ['entity_type=Application', 'entity_type does not have a valid value'],
      [`entity_id=${bob.id}`, 'entity_type is missing'],
      ['entity_type=User&entity_id=bob', 'entity_id is invalid'],
      ['created_before=last-week', 'created_before is invalid'],
    ]) {
      const res = await get(`/audit_events?${query}`);
      expect([query, res.statusCode, res.json()]).toEqual([query, 400, { error }]);
    }
  });

  it("administrators only (GitLab's 403); unknown ids 404; a non-numeric id 400", async () => {
    for (const url of ['/audit_events', '/audit_events/1']) {
      const res = await get(url, aliceToken);
      expect([url, res.statusCode, res.json()]).toEqual([url, 403, { message: '403 Forbidden' }]);
    }
    const none = await get('/audit_events/999999');
    expect([none.statusCode, none.json()]).toEqual([404, { message: '404 Not found' }]);
    const word = await get('/audit_events/abc');
    expect([word.statusCode, word.json()]).toEqual([400, { error: 'id is invalid' }]);
  });
});

describe('notification settings changes are audited on every path', () => {
  it('global, group and project PUTs each record one event with the user and address; a refused one records none', async () => {
    const before = await lastEventId();
    expect((await send('PUT', '/notification_settings?level=watch', aliceToken)).statusCode).toBe(200);
    expect((await send('PUT', `/groups/${group.id}/notification_settings?level=disabled`, aliceToken)).statusCode).toBe(
      200,
    );
    expect(
      (await send('PUT', `/projects/${project.id}/notification_settings?level=custom`, aliceToken)).statusCode,
    ).toBe(200);
    const refused = await send('PUT', '/notification_settings', aliceToken, {
      level: 'mention',
      notification_email: 'someone@else.example',
    });
    expect(refused.statusCode).toBe(400);
    const events = await db
      .selectFrom('audit_events')
      .select(['actor', 'action', 'target_type', 'target_id', 'details', 'ip_address'])
      .where('id', '>', before)
      .orderBy('id')
      .execute();
    const event = (targetType: string, targetId: number, level: string) => ({
      actor: 'user:alice',
      action: 'notification_settings.update',
      target_type: targetType,
      target_id: String(targetId),
      details: { level },
      ip_address: '127.0.0.1',
    });
    expect(events).toEqual([
      event('user', alice.id, 'watch'),
      event('group', group.id, 'disabled'),
      event('project', project.id, 'custom'),
    ]);
    // The refused request changed nothing either.
    expect(
      (await app.inject({ url: '/api/v4/notification_settings', headers: { 'private-token': aliceToken } })).json()
        .level,
    ).toBe('watch');
    // And the trail shows them in GitLab's shape, entity the group and the project.
    const groupEvents = (await get(`/audit_events?entity_type=Group&entity_id=${group.id}`)).json();
    expect(
      groupEvents.map((e: { details: Record<string, unknown> }) => [e.details.event_name, e.details.entity_path]),
    ).toEqual([
      ['notification_settings.update', 'team'],
      ['group.create', 'team'],
    ]);
    const projectEvents = (await get(`/audit_events?entity_type=Project&entity_id=${project.id}`)).json();
    expect(projectEvents[0].details).toMatchObject({
      event_name: 'notification_settings.update',
      entity_path: 'team/app',
      level: 'custom',
    });
  });

  it('a PUT of a group or project the user cannot see records nothing', async () => {
    const hidden = await createGroup(db, { path: 'secret', visibility: 'private' });
    const before = await lastEventId();
    expect((await send('PUT', `/groups/${hidden.id}/notification_settings?level=watch`, aliceToken)).statusCode).toBe(
      404,
    );
    expect((await send('PUT', '/projects/999999/notification_settings?level=watch', aliceToken)).statusCode).toBe(404);
    expect(await lastEventId()).toBe(before);
  });
});
