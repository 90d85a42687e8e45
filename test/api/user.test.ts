// GET /api/v4/user: GitLab's field names and types, is_admin only for admins, no credential leak.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import { makeOAuthToken, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let db: Db;
let app: FastifyInstance;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db, { publicUrl: 'https://lanyard.example.com' });
});

const me = async (token: string) => app.inject({ url: '/api/v4/user', headers: { authorization: `Bearer ${token}` } });

describe('GET /api/v4/user', () => {
  it("returns every contract field with GitLab's types", async () => {
    const user = await makeUser(db, 'alice');
    await db
      .updateTable('users')
      .set({
        name: 'Alice Liddell',
        bio: 'Down the rabbit hole',
        public_email: 'alice@example.com',
        last_sign_in_at: new Date('2026-01-02T03:04:05.678Z'),
      })
      .where('id', '=', user.id)
      .execute();
    const res = await me(await makePat(db, user, ['read_user']));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    const body = res.json();
    expect(body).toEqual({
      id: user.id,
      username: 'alice',
      name: 'Alice Liddell',
      state: 'active',
      locked: false,
      avatar_url: null,
      web_url: 'https://lanyard.example.com/alice',
      created_at: user.created_at.toISOString(),
      bio: 'Down the rabbit hole',
      location: '',
      public_email: 'alice@example.com',
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
      last_sign_in_at: '2026-01-02T03:04:05.678Z',
      confirmed_at: user.confirmed_at!.toISOString(),
      last_activity_on: null,
      email: 'alice@example.com',
      theme_id: 3,
      color_scheme_id: 1,
      projects_limit: 100000,
      current_sign_in_at: null,
      identities: [],
      can_create_group: true,
      can_create_project: true,
      two_factor_enabled: false,
      external: false,
      private_profile: false,
      commit_email: 'alice@example.com',
    });
    expect(body.created_at).toMatch(ISO_MS);
    expect(body.confirmed_at).toMatch(ISO_MS);
    expect(Object.keys(body).slice(0, 8)).toEqual([
      'id',
      'username',
      'name',
      'state',
      'locked',
      'avatar_url',
      'web_url',
      'created_at',
    ]);
  });

  it('is_admin appears for administrators only', async () => {
    const root = await makeUser(db, 'root', { admin: true });
    expect((await me(await makeOAuthToken(db, root, ['read_user']))).json().is_admin).toBe(true);
    const bob = await makeUser(db, 'bob');
    expect((await me(await makeOAuthToken(db, bob, ['read_user']))).json()).not.toHaveProperty('is_admin');
  });

  it('reports two_factor_enabled and locked from the account', async () => {
    const carol = await makeUser(db, 'carol', { twoFactor: true });
    await db
      .updateTable('users')
      .set({ locked_until: new Date(Date.now() + 600_000) })
      .where('id', '=', carol.id)
      .execute();
    const body = (await me(await makePat(db, carol, ['api']))).json();
    expect(body).toMatchObject({ two_factor_enabled: true, locked: true });
    await db
      .updateTable('users')
      .set({ locked_until: new Date(Date.now() - 1000) })
      .where('id', '=', carol.id)
      .execute();
    expect((await me(await makePat(db, carol, ['api']))).json().locked).toBe(false);
  });

  it('never includes a credential', async () => {
    const dave = await makeUser(db, 'dave', { twoFactor: true });
    const text = (await me(await makePat(db, dave, ['api']))).body;
    for (const secret of ['password', 'otp', 'JBSWY3DPEHPK3PXP', 'digest', 'failed_attempts', 'locked_until'])
      expect(text).not.toContain(secret);
  });

  it('HEAD answers 200 without a body', async () => {
    const erin = await makeUser(db, 'erin');
    const res = await app.inject({
      method: 'HEAD',
      url: '/api/v4/user',
      headers: { 'private-token': await makePat(db, erin, ['read_user']) },
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('');
  });
});
