// GET /api/v4/groups, /groups/:id, /projects, /projects/:id (contract §4): GitLab's field names,
// the visibility rule and its 404s, GitLab's pagination headers and parameter errors.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, Project, User } from '../../service/db/schema';
import { addMember, createGroup, createProject, makeOAuthToken, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let alice: User;
let acme: Group;
let team: Group;
let hidden: Group;
let other: Group;
let api: Project;
let secret: Project;
let tokens: { alice: string; bob: string; root: string };

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db, { publicUrl: 'https://lanyard.example' });
  alice = await makeUser(db, 'alice');
  const bob = await makeUser(db, 'bob');
  const root = await makeUser(db, 'root', { admin: true });
  acme = await createGroup(db, { path: 'acme', name: 'Acme Corp', visibility: 'public' });
  team = await createGroup(db, { path: 'team', name: 'Team', parent: 'acme', visibility: 'private' });
  hidden = await createGroup(db, { path: 'hidden', name: 'Hidden', visibility: 'private' });
  other = await createGroup(db, { path: 'other', name: 'Other', visibility: 'internal' });
  api = await createProject(db, { path: 'acme/api', name: 'API', visibility: 'public' });
  secret = await createProject(db, { path: 'acme/team/secret', name: 'Secret', visibility: 'private' });
  await createProject(db, { path: 'hidden/x', visibility: 'private' });
  await addMember(db, { group: 'acme/team', username: 'alice', access: 'owner' });
  await addMember(db, { project: 'acme/api', username: 'bob', access: 'reporter' });
  tokens = {
    alice: await makePat(db, alice, ['read_api']),
    bob: await makePat(db, bob, ['api']),
    root: await makeOAuthToken(db, root, ['api']),
  };
});

const get = (token: string, url: string) =>
  app.inject({ url: `/api/v4${url}`, headers: { authorization: `Bearer ${token}` } });

const groupBody = (g: Group, name: string, fullName: string) => ({
  id: g.id,
  web_url: `https://lanyard.example/groups/${g.full_path}`,
  name,
  path: g.path,
  description: '',
  visibility: g.visibility,
  avatar_url: null,
  full_name: fullName,
  full_path: g.full_path,
  created_at: g.created_at.toISOString(),
  parent_id: g.parent_id,
});

describe('GET /groups/:id', () => {
  it("by numeric id and by URL-encoded full path (any case): GitLab's fields, exact JSON", async () => {
    for (const ref of [String(team.id), 'acme%2Fteam', 'ACME%2FTeam']) {
      const res = await get(tokens.alice, `/groups/${ref}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.body).toBe(
        JSON.stringify({
          id: team.id,
          web_url: 'https://lanyard.example/groups/acme/team',
          name: 'Team',
          path: 'team',
          description: '',
          visibility: 'private',
          avatar_url: null,
          full_name: 'Acme Corp / Team',
          full_path: 'acme/team',
          created_at: team.created_at.toISOString(),
          parent_id: acme.id,
        }),
      );
    }
  });

  it('404 {"message":"404 Group Not Found"} when missing, not visible, or an odd id', async () => {
    const refs = [
      String(team.id), // private, bob is no member
      'acme%2Fteam',
      String(hidden.id),
      '999999',
      '0',
      '-1',
      '1.0',
      '01',
      '%00',
      'acme%00',
      'a'.repeat(10 * 1024),
      'acme%2F',
      '%20acme',
    ];
    for (const ref of refs) {
      const res = await get(tokens.bob, `/groups/${ref}`);
      expect([ref.slice(0, 20), res.statusCode, res.headers['content-type'], res.json()]).toEqual([
        ref.slice(0, 20),
        404,
        'application/json',
        { message: '404 Group Not Found' },
      ]);
    }
  });

  it('admins see private groups; 401 without a token; 403 for a read_user token', async () => {
    expect((await get(tokens.root, `/groups/${hidden.id}`)).json()).toEqual(groupBody(hidden, 'Hidden', 'Hidden'));
    const none = await app.inject({ url: '/api/v4/groups/acme' });
    expect([none.statusCode, none.headers['content-type'], none.json()]).toEqual([
      401,
      'application/json',
      { message: '401 Unauthorized' },
    ]);
    const readUser = await get(await makePat(db, alice, ['read_user']), '/groups/acme');
    expect([readUser.statusCode, readUser.json()]).toEqual([
      403,
      {
        error: 'insufficient_scope',
        error_description: 'The request requires higher privileges than provided by the access token.',
        scope: 'api read_api',
      },
    ]);
  });
});

describe('GET /projects/:id', () => {
  it("by id and by URL-encoded full path: GitLab's fields and its namespace", async () => {
    for (const ref of [String(secret.id), 'acme%2Fteam%2Fsecret']) {
      const res = await get(tokens.alice, `/projects/${ref}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.body).toBe(
        JSON.stringify({
          id: secret.id,
          description: null,
          name: 'Secret',
          name_with_namespace: 'Acme Corp / Team / Secret',
          path: 'secret',
          path_with_namespace: 'acme/team/secret',
          created_at: secret.created_at.toISOString(),
          web_url: 'https://lanyard.example/acme/team/secret',
          avatar_url: null,
          namespace: {
            id: team.id,
            name: 'Team',
            path: 'team',
            kind: 'group',
            full_path: 'acme/team',
            parent_id: acme.id,
            avatar_url: null,
            web_url: 'https://lanyard.example/groups/acme/team',
          },
          visibility: 'private',
        }),
      );
    }
  });

  it('404 {"message":"404 Project Not Found"} when missing, not visible, or an odd id', async () => {
    for (const ref of [
      String(secret.id),
      'acme%2Fteam%2Fsecret',
      'hidden%2Fx',
      '999999',
      '0',
      '-5',
      'x%00',
      'p'.repeat(10 * 1024),
    ]) {
      const res = await get(tokens.bob, `/projects/${ref}`);
      expect([ref.slice(0, 20), res.statusCode, res.json()]).toEqual([
        ref.slice(0, 20),
        404,
        { message: '404 Project Not Found' },
      ]);
    }
  });
});

const names = (res: { json: () => Array<{ full_path?: string; path_with_namespace?: string }> }) =>
  res.json().map((x) => x.full_path ?? x.path_with_namespace);

describe('GET /groups and /projects', () => {
  it('list what the user may see, ordered as GitLab (groups by name, projects newest first)', async () => {
    expect(names(await get(tokens.alice, '/groups'))).toEqual(['acme', 'other', 'acme/team']);
    expect(names(await get(tokens.bob, '/groups'))).toEqual(['acme', 'other']);
    expect(names(await get(tokens.root, '/groups'))).toEqual(['acme', 'hidden', 'other', 'acme/team']);
    expect(names(await get(tokens.alice, '/projects'))).toEqual(['acme/team/secret', 'acme/api']);
    expect(names(await get(tokens.bob, '/projects'))).toEqual(['acme/api']);
    expect(names(await get(tokens.root, '/projects'))).toEqual(['hidden/x', 'acme/team/secret', 'acme/api']);
    const res = await get(tokens.bob, '/groups');
    expect(res.json()).toEqual([groupBody(acme, 'Acme Corp', 'Acme Corp'), groupBody(other, 'Other', 'Other')]);
    expect((await get(tokens.bob, '/projects')).json()[0]).toMatchObject({
      id: api.id,
      name_with_namespace: 'Acme Corp / API',
      namespace: { id: acme.id, full_path: 'acme', parent_id: null },
    });
  });

  it('search, owned, membership, min_access_level, order_by and sort', async () => {
    expect(names(await get(tokens.alice, '/groups?search=TEA'))).toEqual(['acme/team']);
    expect(names(await get(tokens.alice, '/groups?search=%25'))).toEqual([]);
    expect(names(await get(tokens.alice, '/groups?owned=true'))).toEqual(['acme/team']);
    expect(names(await get(tokens.bob, '/groups?owned=1'))).toEqual([]);
    expect(names(await get(tokens.alice, '/projects?membership=true'))).toEqual(['acme/team/secret']);
    expect(names(await get(tokens.bob, '/projects?membership=true'))).toEqual(['acme/api']);
    expect(names(await get(tokens.bob, '/projects?min_access_level=30'))).toEqual([]);
    expect(names(await get(tokens.root, '/groups?order_by=id&sort=desc'))).toEqual([
      'other',
      'hidden',
      'acme/team',
      'acme',
    ]);
    expect(names(await get(tokens.root, '/projects?order_by=path&sort=asc'))).toEqual([
      'acme/api',
      'acme/team/secret',
      'hidden/x',
    ]);
    for (const [url, error] of [
      ['/groups?order_by=nope', 'order_by does not have a valid value'],
      ['/projects?sort=up', 'sort does not have a valid value'],
      ['/projects?min_access_level=15', 'min_access_level does not have a valid value'],
      ['/groups?owned=maybe', 'owned is invalid'],
    ]) {
      const res = await get(tokens.alice, url);
      expect([url, res.statusCode, res.headers['content-type'], res.json()]).toEqual([
        url,
        400,
        'application/json',
        { error },
      ]);
    }
  });

  it("GitLab's pagination headers, Link URLs absolute on PUBLIC_URL, the request's own parameters kept", async () => {
    let res = await get(tokens.root, '/groups?per_page=1&page=2&sort=asc');
    expect(res.statusCode).toBe(200);
    expect(names(res)).toEqual(['hidden']);
    const base = 'https://lanyard.example/api/v4/groups';
    expect({
      'x-total': res.headers['x-total'],
      'x-total-pages': res.headers['x-total-pages'],
      'x-page': res.headers['x-page'],
      'x-per-page': res.headers['x-per-page'],
      'x-next-page': res.headers['x-next-page'],
      'x-prev-page': res.headers['x-prev-page'],
      link: res.headers.link,
    }).toEqual({
      'x-total': '4',
      'x-total-pages': '4',
      'x-page': '2',
      'x-per-page': '1',
      'x-next-page': '3',
      'x-prev-page': '1',
      link: [
        `<${base}?page=1&per_page=1&sort=asc>; rel="prev"`,
        `<${base}?page=3&per_page=1&sort=asc>; rel="next"`,
        `<${base}?page=1&per_page=1&sort=asc>; rel="first"`,
        `<${base}?page=4&per_page=1&sort=asc>; rel="last"`,
      ].join(', '),
    });
    // The token is never echoed into a URL.
    res = await app.inject({ url: `/api/v4/projects?private_token=${tokens.bob}` });
    expect(res.headers.link).toBe(
      '<https://lanyard.example/api/v4/projects?page=1&per_page=20>; rel="first", <https://lanyard.example/api/v4/projects?page=1&per_page=20>; rel="last"',
    );
    expect([res.headers['x-next-page'], res.headers['x-prev-page'], res.headers['x-total-pages']]).toEqual([
      '',
      '',
      '1',
    ]);
    // Past the last page: empty, no prev (as Kaminari), the totals still right.
    res = await get(tokens.root, '/projects?page=9');
    expect([res.json(), res.headers['x-total'], res.headers['x-prev-page'], res.headers['x-next-page']]).toEqual([
      [],
      '3',
      '',
      '',
    ]);
    // per_page above 100 is clamped to 100, as GitLab (Kaminari's max_per_page).
    res = await get(tokens.root, '/projects?per_page=101');
    expect([res.statusCode, res.headers['x-per-page']]).toEqual([200, '100']);
  });

  it("bad page and per_page: 400 with Grape's message, as GitLab", async () => {
    const cases: Array<[string, string]> = [
      ['per_page=0', 'per_page has a value not allowed'],
      ['per_page=-1', 'per_page does not have a valid value'],
      ['per_page=abc', 'per_page is invalid'],
      ['per_page=1.5', 'per_page is invalid'],
      ['per_page=1&per_page=2', 'per_page is invalid'],
      ['page=0', 'page does not have a valid value'],
      ['page=-3', 'page does not have a valid value'],
      ['page=x', 'page is invalid'],
    ];
    for (const list of ['/groups', '/projects']) {
      for (const [query, error] of cases) {
        const res = await get(tokens.alice, `${list}?${query}`);
        expect([list, query, res.statusCode, res.headers['content-type'], res.json()]).toEqual([
          list,
          query,
          400,
          'application/json',
          { error },
        ]);
      }
    }
  });
});
