// Notification recipients over /api/v4 (contract §4, Lanyard's own): POST …/notification_recipients
// for admins, GET …/notification_settings/effective for the caller, the group-level notification
// e-mail on PUT /groups/:id/notification_settings; exact statuses and bodies, bad input refused
// with nothing written.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, Project, User } from '../../service/db/schema';
import { NOTIFICATION_EVENTS } from '../../service/db/schema';
import { addUserEmail } from '../../service/domain/users';
import { addMember, createGroup, createProject, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let admin: User;
let adminToken: string;
let alice: User;
let aliceToken: string;
let bob: User;
let carol: User;
let top: Group;
let sub: Group;
let project: Project;

function call(token: string, method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) {
  return app.inject({
    method,
    url: `/api/v4${url}`,
    headers: { 'private-token': token, ...(payload ? { 'content-type': 'application/json' } : {}) },
    payload: payload === undefined ? undefined : JSON.stringify(payload),
  });
}

async function rowCounts() {
  const count = async (table: 'notification_settings' | 'audit_events') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { settings: await count('notification_settings'), audit: await count('audit_events') };
}

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
  admin = await makeUser(db, 'root', { admin: true });
  adminToken = await makePat(db, admin, ['api']);
  alice = await makeUser(db, 'alice');
  aliceToken = await makePat(db, alice, ['api']);
  bob = await makeUser(db, 'bob');
  carol = await makeUser(db, 'carol');
  top = await createGroup(db, { path: 'acme', visibility: 'private' });
  sub = await createGroup(db, { path: 'team', parent: 'acme', visibility: 'private' });
  project = await createProject(db, { path: 'acme/team/api', visibility: 'private' });
  for (const u of [alice, bob]) await addMember(db, { group: 'acme', username: u.username, access: 'developer' });
  // bob watches the top group; carol is no member of the private project.
  await db.insertInto('notification_settings').values({ user_id: bob.id, group_id: top.id, level: 'watch' }).execute();
});

describe('POST /projects/:id/notification_recipients', () => {
  it('resolves recipients for an admin token, by URL-encoded path', async () => {
    const res = await call(adminToken, 'POST', '/projects/acme%2Fteam%2Fapi/notification_recipients', {
      event: 'new_issue',
      author_id: alice.id,
      participant_ids: [alice.id, carol.id],
      mentioned_ids: [],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      recipients: [
        {
          user_id: bob.id,
          username: 'bob',
          email: 'bob@example.com',
          reason: 'watching',
          level: 'watch',
          source: { type: 'group', id: top.id, full_path: 'acme' },
        },
      ],
    });
  });

  it('mentioned beats watching; a participating member is notified as a participant', async () => {
    const res = await call(adminToken, 'POST', `/projects/${project.id}/notification_recipients`, {
      event: 'new_note',
      participant_ids: [alice.id],
      mentioned_ids: [bob.id],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      recipients: [
        {
          user_id: alice.id,
          username: 'alice',
          email: 'alice@example.com',
          reason: 'participating',
          level: 'participating',
          source: { type: 'global', id: null, full_path: null },
        },
        {
          user_id: bob.id,
          username: 'bob',
          email: 'bob@example.com',
          reason: 'mentioned',
          level: 'watch',
          source: { type: 'group', id: top.id, full_path: 'acme' },
        },
      ],
    });
  });

  it('accepts ids in the query string as participant_ids[]', async () => {
    const res = await app.inject({
      method: 'POST',
      url: `/api/v4/groups/acme/notification_recipients?event=new_note&participant_ids[]=${alice.id}&participant_ids[]=${bob.id}`,
      headers: { 'private-token': adminToken },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().recipients.map((r: { username: string; reason: string }) => [r.username, r.reason])).toEqual([
      ['alice', 'participating'],
      ['bob', 'participating'],
    ]);
  });

  it('refuses non-admin tokens with 403, before looking the project up', async () => {
    for (const url of [
      '/projects/acme%2Fteam%2Fapi/notification_recipients',
      '/projects/nope%2Fx/notification_recipients',
    ]) {
      const res = await call(aliceToken, 'POST', url, { event: 'new_note' });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ message: '403 Forbidden' });
    }
  });

  it('bad input: a clear 400 or 404 with the exact body, and nothing written', async () => {
    const blocked = await makeUser(db, 'blocked-one', { blocked: true });
    const before = await rowCounts();
    const cases: [string, unknown, number, unknown][] = [
      [
        '/projects/acme%2Fteam%2Fnope/notification_recipients',
        { event: 'new_note' },
        404,
        { message: '404 Project Not Found' },
      ],
      ['/groups/acme%2Fnope/notification_recipients', { event: 'new_note' }, 404, { message: '404 Group Not Found' }],
      ['/projects/acme%2Fteam%2Fapi/notification_recipients', {}, 400, { error: 'event is missing' }],
      [
        '/projects/acme%2Fteam%2Fapi/notification_recipients',
        { event: 'new_thing' },
        400,
        { error: 'event does not have a valid value' },
      ],
      [
        '/projects/acme%2Fteam%2Fapi/notification_recipients',
        { event: 'new_note', participant_ids: [999999] },
        400,
        { error: 'participant_ids contains an unknown user: 999999' },
      ],
      [
        '/projects/acme%2Fteam%2Fapi/notification_recipients',
        { event: 'new_note', mentioned_ids: [blocked.id] },
        400,
        { error: `mentioned_ids contains a blocked user: ${blocked.id}` },
      ],
      [
        '/projects/acme%2Fteam%2Fapi/notification_recipients',
        { event: 'new_note', participant_ids: [bob.id, alice.id, bob.id] },
        400,
        { error: `participant_ids contains ${bob.id} more than once` },
      ],
      [
        '/projects/acme%2Fteam%2Fapi/notification_recipients',
        { event: 'new_note', author_id: 999999 },
        400,
        { error: 'author_id is an unknown user: 999999' },
      ],
      [
        '/projects/acme%2Fteam%2Fapi/notification_recipients',
        { event: 'new_note', participant_ids: ['x'] },
        400,
        { error: 'participant_ids is invalid' },
      ],
      [
        '/projects/acme%2Fteam%2Fapi/notification_recipients',
        { event: 'new_note', participant_ids: Array.from({ length: 10_001 }, (_, i) => i + 1) },
        400,
        { error: 'participant_ids must have at most 10000 ids' },
      ],
    ];
    for (const [url, body, status, expected] of cases) {
      const res = await call(adminToken, 'POST', url, body);
      expect({ url, body: res.json(), status: res.statusCode }).toEqual({ url, body: expected, status });
    }
    const after = await rowCounts();
    expect(after).toEqual(before);
  });
});

describe('GET …/notification_settings/effective', () => {
  it("the caller's default: participating from the global setting", async () => {
    const res = await call(aliceToken, 'GET', '/projects/acme%2Fteam%2Fapi/notification_settings/effective');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      level: 'participating',
      source: { type: 'global', id: null, full_path: null },
      notification_email: 'alice@example.com',
      events: Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, false])),
    });
  });

  it("an ancestor's level and the group e-mail set with PUT are inherited (gitlab#367418 over HTTP)", async () => {
    await addUserEmail(db, 'alice', 'alice@work.example');
    let res = await call(aliceToken, 'PUT', '/groups/acme/notification_settings', {
      level: 'custom',
      new_issue: true,
      notification_email: 'alice@work.example',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      level: 'custom',
      events: Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, e === 'new_issue'])),
      notification_email: 'alice@work.example',
    });
    for (const url of ['/projects/acme%2Fteam%2Fapi', '/groups/acme%2Fteam']) {
      res = await call(aliceToken, 'GET', `${url}/notification_settings/effective`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        level: 'custom',
        source: { type: 'group', id: top.id, full_path: 'acme' },
        notification_email: 'alice@work.example',
        events: Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, e === 'new_issue'])),
      });
    }
    // The recipients engine sends alice's new_issue mail to the group's address.
    res = await call(adminToken, 'POST', `/groups/${sub.id}/notification_recipients`, { event: 'new_issue' });
    expect(res.json().recipients.find((r: { username: string }) => r.username === 'alice')).toEqual({
      user_id: alice.id,
      username: 'alice',
      email: 'alice@work.example',
      reason: 'custom',
      level: 'custom',
      source: { type: 'group', id: top.id, full_path: 'acme' },
    });
  });

  it('a group e-mail must be verified: same 400 body as the global one, nothing changed', async () => {
    const before = await call(aliceToken, 'GET', '/groups/acme%2Fteam/notification_settings');
    const res = await call(aliceToken, 'PUT', '/groups/acme%2Fteam/notification_settings', {
      level: 'watch',
      notification_email: 'someone@else.example',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ message: { notification_email: ['must be an email you have verified'] } });
    const after = await call(aliceToken, 'GET', '/groups/acme%2Fteam/notification_settings');
    expect(after.json()).toEqual(before.json());
    expect(after.json()).toEqual({ level: 'global' });
  });

  it('404 for a project the caller cannot see', async () => {
    const carolToken = await makePat(db, carol, ['read_api']);
    const res = await call(carolToken, 'GET', '/projects/acme%2Fteam%2Fapi/notification_settings/effective');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ message: '404 Project Not Found' });
  });
});
