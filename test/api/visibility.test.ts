// The visibility matrix (contract §4): public/internal/private × direct member / ancestor-group
// member / non-member, for groups and projects, through the API (hidden = 404 exactly as missing)
// and through the domain functions the admin CLI can share; the lists' SQL copy of the rule must agree.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, Project, User, Visibility } from '../../service/db/schema';
import { findVisibleGroup, findVisibleProject } from '../../service/domain/visibility';
import { addMember, createGroup, createProject, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

const VISIBILITIES: Visibility[] = ['public', 'internal', 'private'];
const RELATIONS = ['member', 'ancestor member', 'non-member'] as const;
type Relation = (typeof RELATIONS)[number];

let db: Db;
let app: FastifyInstance;
const users = {} as Record<Relation | 'admin' | 'child member', { user: User; token: string }>;
// For each visibility: a group `g-<v>/sub-<v>` of that visibility under a top group of the same
// visibility, and a project `p-<v>/mid/proj` under two such groups (a child is never more visible
// than its parent, issue 22).
const groups = {} as Record<Visibility, Group>;
const projects = {} as Record<Visibility, Project>;
let topGroup: Group;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
  for (const name of [...RELATIONS, 'admin', 'child member'] as const) {
    const user = await makeUser(db, name.replace(/ /g, '-'), { admin: name === 'admin' });
    users[name] = { user, token: await makePat(db, user, ['api']) };
  }
  const member = users.member.user.username;
  const ancestor = users['ancestor member'].user.username;
  for (const v of VISIBILITIES) {
    await createGroup(db, { path: `g-${v}`, visibility: v });
    groups[v] = await createGroup(db, { path: `sub-${v}`, parent: `g-${v}`, visibility: v });
    await addMember(db, { group: `g-${v}/sub-${v}`, username: member, access: 'guest' });
    await addMember(db, { group: `g-${v}`, username: ancestor, access: 'developer' });

    await createGroup(db, { path: `p-${v}`, visibility: v });
    await createGroup(db, { path: 'mid', parent: `p-${v}`, visibility: v });
    projects[v] = await createProject(db, { path: `p-${v}/mid/proj`, visibility: v });
    await addMember(db, { project: `p-${v}/mid/proj`, username: member, access: 'reporter' });
    await addMember(db, { group: `p-${v}`, username: ancestor, access: 'maintainer' });
  }
  topGroup = await createGroup(db, { path: 'top', visibility: 'private' });
  await createGroup(db, { path: 'child', parent: 'top', visibility: 'private' });
  await addMember(db, { group: 'top/child', username: users['child member'].user.username, access: 'owner' });
});

const expectedVisible = (v: Visibility, relation: Relation) => v !== 'private' || relation !== 'non-member';

describe.each(VISIBILITIES)('%s', (v) => {
  it.each(RELATIONS)('group, %s', async (relation) => {
    const { token, user } = users[relation];
    const visible = expectedVisible(v, relation);
    expect((await findVisibleGroup(db, user, String(groups[v].id)))?.id).toBe(visible ? groups[v].id : undefined);
    // The same rule (visibleSql), as the routes apply it: one by id and the list (listing.ts).
    const one = await app.inject({ url: `/api/v4/groups/${groups[v].id}`, headers: { 'private-token': token } });
    expect(one.statusCode).toBe(visible ? 200 : 404);
    const list = await app.inject({ url: '/api/v4/groups?per_page=100', headers: { 'private-token': token } });
    expect((list.json() as Array<{ id: number }>).some((g) => g.id === groups[v].id)).toBe(visible);
    for (const ref of [String(groups[v].id), encodeURIComponent(groups[v].full_path)]) {
      for (const method of ['GET', 'PUT'] as const) {
        const res = await app.inject({
          method,
          url: `/api/v4/groups/${ref}/notification_settings?level=watch`,
          headers: { 'private-token': token },
        });
        if (visible) expect(res.statusCode).toBe(200);
        else expect([res.statusCode, res.body]).toEqual([404, '{"message":"404 Group Not Found"}']);
      }
    }
  });

  it.each(RELATIONS)('project, %s', async (relation) => {
    const { token, user } = users[relation];
    const visible = expectedVisible(v, relation);
    expect((await findVisibleProject(db, user, String(projects[v].id)))?.id).toBe(visible ? projects[v].id : undefined);
    const one = await app.inject({ url: `/api/v4/projects/${projects[v].id}`, headers: { 'private-token': token } });
    expect(one.statusCode).toBe(visible ? 200 : 404);
    const list = await app.inject({ url: '/api/v4/projects?per_page=100', headers: { 'private-token': token } });
    expect((list.json() as Array<{ id: number }>).some((p) => p.id === projects[v].id)).toBe(visible);
    for (const ref of [String(projects[v].id), encodeURIComponent(projects[v].path_with_namespace)]) {
      for (const method of ['GET', 'PUT'] as const) {
        const res = await app.inject({
          method,
          url: `/api/v4/projects/${ref}/notification_settings?level=watch`,
          headers: { 'private-token': token },
        });
        if (visible) expect(res.statusCode).toBe(200);
        else expect([res.statusCode, res.body]).toEqual([404, '{"message":"404 Project Not Found"}']);
      }
    }
  });
});

describe('edges', () => {
  it('a hidden group or project answers exactly like a missing one (no existence leak)', async () => {
    const { token } = users['non-member'];
    const get = (url: string) => app.inject({ url, headers: { 'private-token': token } });
    const hidden = await get(`/api/v4/groups/${groups.private.id}/notification_settings`);
    const missing = await get('/api/v4/groups/987654/notification_settings');
    expect([hidden.statusCode, hidden.body, hidden.headers['content-type']]).toEqual([
      missing.statusCode,
      missing.body,
      missing.headers['content-type'],
    ]);
    const hiddenP = await get(
      `/api/v4/projects/${encodeURIComponent(projects.private.path_with_namespace)}/notification_settings`,
    );
    const missingP = await get(`/api/v4/projects/${encodeURIComponent('p-private/mid/nope')}/notification_settings`);
    expect([hiddenP.statusCode, hiddenP.body]).toEqual([missingP.statusCode, missingP.body]);
  });

  it('a hidden source is not written to by a PUT', async () => {
    const { token, user } = users['non-member'];
    const res = await app.inject({
      method: 'PUT',
      url: `/api/v4/groups/${groups.private.id}/notification_settings?level=watch`,
      headers: { 'private-token': token },
    });
    expect(res.statusCode).toBe(404);
    expect(
      await db
        .selectFrom('notification_settings')
        .select('id')
        .where('user_id', '=', user.id)
        .where('group_id', '=', groups.private.id)
        .execute(),
    ).toEqual([]);
  });

  it('membership of a subgroup does not reveal its private parent', async () => {
    const { user } = users['child member'];
    expect(await findVisibleGroup(db, user, 'top/child')).toMatchObject({ full_path: 'top/child' });
    expect(await findVisibleGroup(db, user, 'top')).toBeUndefined();
    expect(await findVisibleGroup(db, user, String(topGroup.id))).toBeUndefined();
  });

  it('a project member does not see the private groups above the project', async () => {
    const { user } = users.member;
    expect(await findVisibleProject(db, user, 'p-private/mid/proj')).toBeDefined();
    expect(await findVisibleGroup(db, user, 'p-private/mid')).toBeUndefined();
  });

  it('administrators see every group and project (GitLab without Admin Mode)', async () => {
    const { user } = users.admin;
    expect(await findVisibleGroup(db, user, 'g-private/sub-private')).toBeDefined();
    expect(await findVisibleProject(db, user, String(projects.private.id))).toBeDefined();
  });

  it('regression: a NUL in :id is a 404, not a 500 (PostgreSQL rejects NUL in text)', async () => {
    const { token } = users.member;
    for (const url of [
      '/api/v4/groups/%00/notification_settings',
      '/api/v4/projects/g-public%2F%00/notification_settings',
    ]) {
      const res = await app.inject({ url, headers: { 'private-token': token } });
      expect(res.statusCode).toBe(404);
    }
    expect(await findVisibleGroup(db, users.member.user, '')).toBeUndefined();
  });

  it('regression: full paths longer than 100 URL-encoded characters work (was a 414 from the router)', async () => {
    const { token } = users.member;
    let parent = 'g-public/sub-public';
    for (let i = 0; i < 6; i++) {
      await createGroup(db, { path: `a-rather-long-nested-group-name-${i}`, parent, visibility: 'public' });
      parent = `${parent}/a-rather-long-nested-group-name-${i}`;
    }
    expect(encodeURIComponent(parent).length).toBeGreaterThan(200);
    const res = await app.inject({
      url: `/api/v4/groups/${encodeURIComponent(parent)}/notification_settings`,
      headers: { 'private-token': token },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ level: 'global' });
  });

  it('regression: a malformed %-escape in the path is a 400 with a JSON body, not a default error page', async () => {
    const res = await app.inject({
      url: '/api/v4/groups/%E0%A4%A/notification_settings',
      headers: { 'private-token': users.member.token },
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.json()).toEqual({ message: '400 Bad request' });
  });

  it('paths match case-insensitively; ids must be plain positive integers', async () => {
    const { user } = users.member;
    expect((await findVisibleGroup(db, user, 'G-PUBLIC/Sub-Public'))?.id).toBe(groups.public.id);
    expect(await findVisibleGroup(db, user, `0${groups.public.id}`)).toBeUndefined();
    expect(await findVisibleGroup(db, user, `${groups.public.id}.0`)).toBeUndefined();
  });
});
