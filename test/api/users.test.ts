// The users API (GitLab's GET /users, GET /users/:id, POST /users/:id/block|unblock): GitLab's
// public and admin shapes, its filters and pagination, its 403/404 bodies, and blocking through
// the CLI's domain function (the user's tokens stop working at once; audited).
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, User } from '../../service/db/schema';
import { addUserEmail } from '../../service/domain/users';
import { addMember, createGroup, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let root: User;
let alice: User;
let bob: User;
let rootToken: string;
let aliceToken: string;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db, { publicUrl: 'https://lanyard.example.com' });
  root = await makeUser(db, 'root', { admin: true });
  alice = await makeUser(db, 'alice');
  bob = await makeUser(db, 'bob', { blocked: true });
  await db
    .updateTable('users')
    .set({ name: 'Alice Liddell', public_email: 'alice@public.example' })
    .where('id', '=', alice.id)
    .execute();
  await addUserEmail(db, 'alice', 'alice@work.example');
  rootToken = await makePat(db, root, ['api']);
  aliceToken = await makePat(db, alice, ['read_user']);
});

const get = (url: string, token: string) => app.inject({ url: `/api/v4${url}`, headers: { 'private-token': token } });
const post = (url: string, token: string) =>
  app.inject({ method: 'POST', url: `/api/v4${url}`, headers: { 'private-token': token } });

const basic = (u: User, name = u.name, state = u.state) => ({
  id: u.id,
  username: u.username,
  name,
  state,
  locked: false,
  avatar_url: null,
  web_url: `https://lanyard.example.com/${u.username}`,
});

const ids = (body: Array<{ id: number }>) => body.map((u) => u.id);

describe('GET /users', () => {
  it("anyone lists users as GitLab's UserBasic, newest first, with pagination headers; blocked ones only administrators", async () => {
    const res = await get('/users', aliceToken);
    expect([res.statusCode, res.headers['content-type']]).toEqual([200, 'application/json']);
    // GitLab's UsersFinder: without_forbidden_states for everyone but administrators.
    expect(res.json()).toEqual([basic(alice, 'Alice Liddell'), basic(root)]);
    expect([res.headers['x-total'], res.headers['x-total-pages']]).toEqual(['2', '1']);
    expect(ids((await get('/users', rootToken)).json())).toEqual([bob.id, alice.id, root.id]);
    const paged = await get('/users?per_page=1&page=2', rootToken);
    expect([ids(paged.json()), paged.headers['x-next-page'], paged.headers['x-prev-page']]).toEqual([
      [alice.id],
      '3',
      '1',
    ]);
  });

  it('username= (exact, any case), search= (name, username, public e-mail), active=, blocked=', async () => {
    expect(ids((await get('/users?username=ALICE', aliceToken)).json())).toEqual([alice.id]);
    expect(ids((await get('/users?username=ali', aliceToken)).json())).toEqual([]);
    expect(ids((await get('/users?search=liddell', aliceToken)).json())).toEqual([alice.id]);
    expect(ids((await get('/users?search=alice@public.example', aliceToken)).json())).toEqual([alice.id]);
    expect(ids((await get('/users?active=true', aliceToken)).json())).toEqual([alice.id, root.id]);
    expect(ids((await get('/users?blocked=true', aliceToken)).json())).toEqual([]);
    expect(ids((await get('/users?blocked=true', rootToken)).json())).toEqual([bob.id]);
    // Private e-mails are searchable by administrators only.
    expect(ids((await get('/users?search=alice@work.example', aliceToken)).json())).toEqual([]);
    expect(ids((await get('/users?search=alice@work.example', rootToken)).json())).toEqual([alice.id]);
    expect(ids((await get('/users?search=alice@example.com', rootToken)).json())).toEqual([alice.id]);
    // The administrators' ordering is ignored for others, as GitLab drops it.
    // (By username descending it would be root, alice.)
    expect(ids((await get('/users?order_by=username&sort=desc', aliceToken)).json())).toEqual([alice.id, root.id]);
    expect(ids((await get('/users?order_by=username&sort=asc', rootToken)).json())).toEqual([
      alice.id,
      bob.id,
      root.id,
    ]);
    for (const [query, error] of [
      ['active=perhaps', 'active is invalid'],
      ['order_by=email', 'order_by does not have a valid value'],
      ['sort=up', 'sort does not have a valid value'],
      ['created_after=tomorrow', 'created_after is invalid'],
    ]) {
      const res = await get(`/users?${query}`, rootToken);
      expect([query, res.statusCode, res.json()]).toEqual([query, 400, { error }]);
    }
  });

  it("administrators get GitLab's UserWithAdmin", async () => {
    const res = await get('/users?username=alice', rootToken);
    const [a] = res.json();
    expect(Object.keys(a)).toEqual([
      'id',
      'username',
      'name',
      'state',
      'locked',
      'avatar_url',
      'web_url',
      'created_at',
      'bio',
      'location',
      'public_email',
      'skype',
      'linkedin',
      'twitter',
      'discord',
      'website_url',
      'organization',
      'job_title',
      'pronouns',
      'bot',
      'work_information',
      'followers',
      'following',
      'is_followed',
      'local_time',
      'last_sign_in_at',
      'confirmed_at',
      'last_activity_on',
      'email',
      'theme_id',
      'color_scheme_id',
      'projects_limit',
      'current_sign_in_at',
      'identities',
      'can_create_group',
      'can_create_project',
      'two_factor_enabled',
      'external',
      'private_profile',
      'commit_email',
      'is_admin',
      'note',
      'namespace_id',
      'created_by',
      'email_reset_offered_at',
    ]);
    expect(a).toMatchObject({ email: 'alice@example.com', is_admin: false, note: null, two_factor_enabled: false });
    expect((await get('/users?admins=true', rootToken)).json().map((u: { username: string }) => u.username)).toEqual([
      'root',
    ]);
  });
});

describe('GET /users/:id', () => {
  it("others see GitLab's public User; administrators UserDetailsWithAdmin; unknown ids 404", async () => {
    const res = await get(`/users/${alice.id}`, aliceToken);
    expect([res.statusCode, res.json()]).toEqual([
      200,
      {
        ...basic(alice, 'Alice Liddell'),
        created_at: alice.created_at.toISOString(),
        bio: '',
        location: '',
        public_email: 'alice@public.example',
        skype: '',
        linkedin: '',
        twitter: '',
        discord: '',
        website_url: '',
        organization: '',
        job_title: '',
        pronouns: null,
        bot: false,
        work_information: null,
        followers: 0,
        following: 0,
        is_followed: false,
        local_time: null,
      },
    ]);
    const group = await createGroup(db, { path: 'team' });
    await addMember(db, { username: 'alice', group: group.full_path, access: 'maintainer' });
    const admin = (await get(`/users/${alice.id}`, rootToken)).json();
    expect([admin.email, admin.is_admin, admin.highest_role, admin.current_sign_in_ip, admin.last_sign_in_ip]).toEqual([
      'alice@example.com',
      false,
      40,
      null,
      null,
    ]);
    const none = await get('/users/999999', aliceToken);
    expect([none.statusCode, none.json()]).toEqual([404, { message: '404 User Not Found' }]);
    const word = await get('/users/alice', aliceToken);
    expect([word.statusCode, word.json()]).toEqual([404, { error: '404 Not Found' }]);
  });
});

describe('POST /users/:id/block and /unblock', () => {
  it('blocks (201 true): the user’s tokens stop working at once; audited; unblock restores them', async () => {
    const carol = await makeUser(db, 'carol');
    const carolToken = await makePat(db, carol, ['api']);
    expect((await get('/user', carolToken)).statusCode).toBe(200);
    const res = await post(`/users/${carol.id}/block`, rootToken);
    expect([res.statusCode, res.headers['content-type'], res.body]).toEqual([201, 'application/json', 'true']);
    const refused = await get('/user', carolToken);
    expect([refused.statusCode, refused.json()]).toEqual([403, { message: '403 Forbidden' }]);
    // GitLab: blocking a blocked user does nothing and says null; unblocking an active one says false.
    expect([(await post(`/users/${carol.id}/block`, rootToken)).body]).toEqual(['null']);
    const un = await post(`/users/${carol.id}/unblock`, rootToken);
    expect([un.statusCode, un.body]).toEqual([201, 'true']);
    expect((await get('/user', carolToken)).statusCode).toBe(200);
    expect([(await post(`/users/${carol.id}/unblock`, rootToken)).body]).toEqual(['false']);
    const audit = await db
      .selectFrom('audit_events')
      .select(['actor', 'action', 'target_type', 'target_id', 'ip_address'])
      .where('target_id', '=', String(carol.id))
      .where('action', 'in', ['user.block', 'user.unblock'])
      .orderBy('id')
      .execute();
    expect(audit).toEqual([
      {
        actor: 'user:root',
        action: 'user.block',
        target_type: 'user',
        target_id: String(carol.id),
        ip_address: '127.0.0.1',
      },
      {
        actor: 'user:root',
        action: 'user.unblock',
        target_type: 'user',
        target_id: String(carol.id),
        ip_address: '127.0.0.1',
      },
    ]);
  });

  it("GitLab's refusals: non-admins 403, unknown 404, an administrator blocking themselves 403", async () => {
    const apiToken = await makePat(db, alice, ['api']);
    const cases: Array<[string, string, number, unknown]> = [
      [apiToken, `/users/${root.id}/block`, 403, { message: '403 Forbidden' }],
      [apiToken, `/users/${bob.id}/unblock`, 403, { message: '403 Forbidden' }],
      [rootToken, '/users/999999/block', 404, { message: '404 User Not Found' }],
      [rootToken, '/users/999999/unblock', 404, { message: '404 User Not Found' }],
      [
        rootToken,
        `/users/${root.id}/block`,
        403,
        { message: '403 Forbidden - The API initiating user cannot be blocked by the API' },
      ],
    ];
    for (const [token, url, status, body] of cases) {
      const res = await post(url, token);
      expect([url, res.statusCode, res.json()]).toEqual([url, status, body]);
    }
    const states = await db.selectFrom('users').select(['username', 'state']).orderBy('id').execute();
    expect(states.filter((u) => ['root', 'bob'].includes(u.username))).toEqual([
      { username: 'root', state: 'active' },
      { username: 'bob', state: 'blocked' },
    ]);
    // A read-only token may read users but not block them.
    expect((await post(`/users/${alice.id}/block`, aliceToken)).statusCode).toBe(403);
  });
});
