// How many round trips to PostgreSQL the hot /api/v4 requests take (issue 15: "notification GET in
// 1 and PUT in 2"), counted on the real app over a recording database handle, with the answers
// they must still give (the Sudo case reads the acting user's settings, not the token owner's).
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { User } from '../../service/db/schema';
import { addMember, createGroup, createProject, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';
import { type CountingDb, countingDb } from '../support/statement-counter';

let app: FastifyInstance;
let counter: CountingDb;
let alice: User;
let pat: string;
let projectId: number;

beforeAll(async () => {
  const t = await createTestDatabase();
  counter = countingDb(t);
  app = await buildTestApp(counter.db);
  alice = await makeUser(t.db, 'alice');
  pat = await makePat(t.db, alice, ['api', 'sudo']);
  await createGroup(t.db, { path: 'platform', visibility: 'public' });
  projectId = (await createProject(t.db, { path: 'platform/api', visibility: 'public' })).id;
  // The token's first use records last_used_at (at most once a minute): not what is counted here.
  await app.inject({ method: 'GET', url: '/api/v4/user', headers: { 'private-token': pat } });
});

async function roundTrips(method: 'GET' | 'PUT', url: string, headers: Record<string, string> = {}) {
  counter.reset();
  const res = await app.inject({ method, url, headers: { 'private-token': pat, ...headers } });
  return { status: res.statusCode, body: res.json(), statements: [...counter.statements] };
}

describe('round trips per request', () => {
  it('GET /api/v4/user: 1 (the token and its owner, by digest)', async () => {
    const r = await roundTrips('GET', '/api/v4/user');
    expect([r.status, r.body.username, r.statements.length]).toEqual([200, 'alice', 1]);
  });

  it('GET /notification_settings: 1 (the global row comes with the token)', async () => {
    const before = await roundTrips('GET', '/api/v4/notification_settings');
    expect(before).toMatchObject({
      status: 200,
      body: { level: 'participating', notification_email: 'alice@example.com' },
    });
    expect(before.statements).toHaveLength(1);
    await app.inject({
      method: 'PUT',
      url: '/api/v4/notification_settings?level=custom&new_note=true',
      headers: { 'private-token': pat },
    });
    const after = await roundTrips('GET', '/api/v4/notification_settings');
    expect(after.status).toBe(200);
    expect(after.body).toEqual({
      level: 'custom',
      notification_email: 'alice@example.com',
      events: {
        new_release: false,
        new_note: true,
        new_issue: false,
        reopen_issue: false,
        close_issue: false,
        reassign_issue: false,
        issue_due: false,
        new_merge_request: false,
        push_to_merge_request: false,
        reopen_merge_request: false,
        close_merge_request: false,
        reassign_merge_request: false,
        change_reviewer_merge_request: false,
        merge_merge_request: false,
        failed_pipeline: false,
        fixed_pipeline: false,
        success_pipeline: false,
        moved_project: false,
        merge_when_pipeline_succeeds: false,
      },
    });
    expect(after.statements).toHaveLength(1);
  });

  it('GET /notification_settings with Sudo: the settings of the sudoed user, not of the token owner', async () => {
    const root = await makeUser(counter.db, 'root', { admin: true });
    const rootPat = await makePat(counter.db, root, ['api', 'sudo']);
    await app.inject({ method: 'GET', url: '/api/v4/user', headers: { 'private-token': rootPat } });
    await app.inject({
      method: 'PUT',
      url: '/api/v4/notification_settings?level=watch',
      headers: { 'private-token': rootPat },
    });
    const res = await app.inject({
      method: 'GET',
      url: '/api/v4/notification_settings',
      headers: { 'private-token': rootPat, sudo: 'alice' },
    });
    expect([res.statusCode, res.json().level, res.json().notification_email]).toEqual([
      200,
      'custom',
      'alice@example.com',
    ]);
  });

  it('GET /groups/:id of a private group: 3 as a member (the token, the visible group, its full name), 2 for a 404', async () => {
    await createGroup(counter.db, { path: 'inner', visibility: 'private' });
    await createGroup(counter.db, { path: 'circle', parent: 'inner', visibility: 'private' });
    await addMember(counter.db, { group: 'inner', username: 'alice', access: 'guest' });
    const member = await roundTrips('GET', '/api/v4/groups/inner%2Fcircle');
    expect([member.status, member.body.full_name, member.statements.length]).toEqual([200, 'inner / circle', 3]);
    const bob = await makeUser(counter.db, 'bob');
    const bobPat = await makePat(counter.db, bob, ['api']);
    await app.inject({ method: 'GET', url: '/api/v4/user', headers: { 'private-token': bobPat } });
    const hidden = await roundTrips('GET', '/api/v4/groups/inner%2Fcircle', { 'private-token': bobPat });
    expect([hidden.status, hidden.body, hidden.statements.length]).toEqual([
      404,
      { message: '404 Group Not Found' },
      2,
    ]);
  });

  it('GET /projects/:id/notification_settings: 2 (the token, then the visible project with the row for it)', async () => {
    const unset = await roundTrips('GET', `/api/v4/projects/${projectId}/notification_settings`);
    expect([unset.status, unset.body, unset.statements.length]).toEqual([200, { level: 'global' }, 2]);
    const byPath = await roundTrips('GET', '/api/v4/projects/platform%2Fapi/notification_settings');
    expect([byPath.status, byPath.body, byPath.statements.length]).toEqual([200, { level: 'global' }, 2]);
    const missing = await roundTrips('GET', '/api/v4/projects/999999/notification_settings');
    expect([missing.status, missing.body, missing.statements.length]).toEqual([
      404,
      { message: '404 Project Not Found' },
      2,
    ]);
  });

  it('PUT /projects/:id/notification_settings: 2 (the token, then one upsert into the visible project)', async () => {
    const r = await roundTrips('PUT', `/api/v4/projects/${projectId}/notification_settings?level=watch`);
    expect([r.status, r.body, r.statements.length]).toEqual([200, { level: 'watch' }, 2]);
  });
});
