// Notification settings over /api/v4 (contract §4): defaults, levels, flags, e-mail validation,
// parameters from query/form/JSON, :id by number and URL-encoded full path, atomicity of a
// rejected PUT and of concurrent PUTs.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, Project, User } from '../../service/db/schema';
import { NOTIFICATION_EVENTS } from '../../service/db/schema';
import { addUserEmail } from '../../service/domain/users';
import { createGroup, createProject, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

const allEvents = (value: boolean, overrides: Record<string, boolean> = {}) => ({
  ...Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, value])),
  ...overrides,
});

let db: Db;
let app: FastifyInstance;
let group: Group;
let sub: Group;
let project: Project;
let counter = 0;

/** A fresh user with an api PAT, so tests do not share settings. */
async function newUser(): Promise<{ user: User; token: string }> {
  const user = await makeUser(db, `user${++counter}`);
  return { user, token: await makePat(db, user, ['api']) };
}

function request(token: string, method: 'GET' | 'PUT', url: string, payload?: unknown, contentType?: string) {
  const headers: Record<string, string> = { 'private-token': token };
  if (contentType) headers['content-type'] = contentType;
  return app.inject({ method, url: `/api/v4${url}`, headers, payload: payload as string | undefined });
}

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
  group = await createGroup(db, { path: 'my-group', visibility: 'public' });
  sub = await createGroup(db, { path: 'sub', parent: 'my-group', visibility: 'internal' });
  project = await createProject(db, { path: 'my-group/sub/my-project', visibility: 'internal' });
});

describe('global', () => {
  it('defaults to participating with the primary e-mail', async () => {
    const { token, user } = await newUser();
    const res = await request(token, 'GET', '/notification_settings');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.body).toBe(JSON.stringify({ level: 'participating', notification_email: user.email }));
  });

  it('PUT sets the level and a verified secondary e-mail; custom shows all 19 events', async () => {
    const { token, user } = await newUser();
    await addUserEmail(db, user.username, `${user.username}.work@example.com`);
    let res = await request(
      token,
      'PUT',
      `/notification_settings?level=watch&notification_email=${user.username}.work@example.com`,
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ level: 'watch', notification_email: `${user.username}.work@example.com` });
    res = await request(token, 'PUT', '/notification_settings?level=custom&new_note=true&failed_pipeline=1');
    expect(res.json()).toEqual({
      level: 'custom',
      events: allEvents(false, { new_note: true, failed_pipeline: true }),
      notification_email: `${user.username}.work@example.com`,
    });
    res = await request(token, 'GET', '/notification_settings');
    expect(res.json()).toEqual({
      level: 'custom',
      events: allEvents(false, { new_note: true, failed_pipeline: true }),
      notification_email: `${user.username}.work@example.com`,
    });
    // Back to a non-custom level: no events member, flags kept for later.
    res = await request(token, 'PUT', '/notification_settings?level=mention');
    expect(res.json()).toEqual({ level: 'mention', notification_email: `${user.username}.work@example.com` });
    res = await request(token, 'PUT', '/notification_settings?level=custom');
    expect(res.json().events).toEqual(allEvents(false, { new_note: true, failed_pipeline: true }));
    // The primary e-mail is always allowed; matching ignores case; an empty value resets to it.
    res = await request(token, 'PUT', `/notification_settings?notification_email=${user.email.toUpperCase()}`);
    expect(res.json().notification_email).toBe(user.email);
    await request(token, 'PUT', `/notification_settings?notification_email=${user.username}.work@example.com`);
    res = await request(token, 'PUT', '/notification_settings?notification_email=');
    expect(res.json().notification_email).toBe(user.email);
  });

  it("400 for an e-mail that is not verified (unconfirmed, another user's, unknown)", async () => {
    const { token, user } = await newUser();
    await db
      .insertInto('user_emails')
      .values({ user_id: user.id, email: `${user.username}.pending@example.com`, confirmed_at: null })
      .execute();
    for (const email of [
      `${user.username}.pending@example.com`,
      'alice@example.com',
      'nobody@example.com',
      'not-an-email',
    ]) {
      const res = await request(token, 'PUT', `/notification_settings?notification_email=${encodeURIComponent(email)}`);
      expect(res.statusCode).toBe(400);
      expect(res.body).toBe('{"message":{"notification_email":["must be an email you have verified"]}}');
    }
  });

  it('400 for an invalid level, {"message":"\'x\' is not a valid level"}', async () => {
    const { token } = await newUser();
    for (const [level, message] of [
      ['x', "'x' is not a valid level"],
      ['WATCH', "'WATCH' is not a valid level"],
      ['', "'' is not a valid level"],
    ]) {
      const res = await request(token, 'PUT', `/notification_settings?level=${level}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ message });
    }
    const json = await request(token, 'PUT', '/notification_settings', { level: 7 });
    expect(json.json()).toEqual({ message: "'7' is not a valid level" });
  });

  it('400 {"error":"<flag> is invalid"} for an uncoercible flag, from query, form or JSON', async () => {
    const { token } = await newUser();
    const cases: Array<[string, unknown, string | undefined, string]> = [
      ['/notification_settings?new_note=yess', undefined, undefined, 'new_note'],
      ['/notification_settings?new_note=', undefined, undefined, 'new_note'],
      ['/notification_settings?success_pipeline=2', undefined, undefined, 'success_pipeline'],
      ['/notification_settings', 'level=custom&close_issue=maybe', 'application/x-www-form-urlencoded', 'close_issue'],
      ['/notification_settings', { level: 'custom', new_issue: 'nope' }, undefined, 'new_issue'],
      ['/notification_settings', { level: 'custom', new_note: 2 }, undefined, 'new_note'],
      ['/notification_settings', { level: 'custom', new_note: null }, undefined, 'new_note'],
      ['/notification_settings', { new_note: [true] }, undefined, 'new_note'],
    ];
    for (const [url, payload, type, flag] of cases) {
      const res = await request(token, 'PUT', url, payload, type);
      expect([url, payload, res.statusCode, res.json()]).toEqual([url, payload, 400, { error: `${flag} is invalid` }]);
    }
  });

  it("booleans as GitLab's Grape coerces them: yes/no, on/off, t/f, y/n in its casings", async () => {
    const { token } = await newUser();
    const cases: Array<[string, boolean]> = [
      ['yes', true],
      ['On', true],
      ['T', true],
      ['y', true],
      ['TRUE', true],
      ['no', false],
      ['OFF', false],
      ['f', false],
      ['N', false],
      ['False', false],
    ];
    for (const [value, expected] of cases) {
      const res = await request(token, 'PUT', `/notification_settings?level=custom&new_note=${value}`);
      expect([value, res.statusCode, res.json().events.new_note]).toEqual([value, 200, expected]);
    }
  });

  it('an array where a scalar is expected is a 400 and changes nothing (level[]=, repeated, JSON array)', async () => {
    const { token } = await newUser();
    await request(token, 'PUT', '/notification_settings?level=watch');
    const cases: Array<[string, unknown, string | undefined, string]> = [
      ['/notification_settings?level[]=custom', undefined, undefined, 'level'],
      ['/notification_settings?level=custom&level=mention', undefined, undefined, 'level'],
      ['/notification_settings?new_note[]=true&level=custom', undefined, undefined, 'new_note'],
      ['/notification_settings', 'level[]=custom', 'application/x-www-form-urlencoded', 'level'],
      ['/notification_settings', { level: ['custom'] }, undefined, 'level'],
      ['/notification_settings', { level: { x: 'custom' } }, undefined, 'level'],
      ['/notification_settings', { notification_email: ['a@example.com'] }, undefined, 'notification_email'],
    ];
    for (const [url, payload, type, name] of cases) {
      const res = await request(token, 'PUT', url, payload, type);
      expect([url, payload, res.statusCode, res.headers['content-type'], res.json()]).toEqual([
        url,
        payload,
        400,
        'application/json',
        { error: `${name} is invalid` },
      ]);
    }
    expect((await request(token, 'GET', '/notification_settings')).json().level).toBe('watch');
    const group = await request(token, 'PUT', `/groups/${sub.id}/notification_settings?level[]=custom`);
    expect([group.statusCode, group.json()]).toEqual([400, { error: 'level is invalid' }]);
  });

  it('reads parameters from the query string, a form body and a JSON body (body wins)', async () => {
    const { token } = await newUser();
    let res = await request(token, 'PUT', '/notification_settings?level=custom&new_note=1&new_issue=false');
    expect(res.json()).toMatchObject({ level: 'custom', events: allEvents(false, { new_note: true }) });
    res = await request(
      token,
      'PUT',
      '/notification_settings',
      'level=custom&new_issue=true&new_note=0',
      'application/x-www-form-urlencoded',
    );
    expect(res.json()).toMatchObject({ level: 'custom', events: allEvents(false, { new_issue: true }) });
    res = await request(token, 'PUT', '/notification_settings', {
      level: 'custom',
      reopen_issue: true,
      new_issue: 0,
      close_issue: '1',
    });
    expect(res.json()).toMatchObject({
      level: 'custom',
      events: allEvents(false, { reopen_issue: true, close_issue: true }),
    });
    // Query and body merged, the body winning.
    res = await request(token, 'PUT', '/notification_settings?level=watch&merge_merge_request=true', {
      level: 'custom',
      reopen_issue: false,
    });
    expect(res.json()).toMatchObject({
      level: 'custom',
      events: allEvents(false, { close_issue: true, merge_merge_request: true }),
    });
    res = await request(
      token,
      'PUT',
      '/notification_settings?level=watch',
      'level=disabled',
      'application/x-www-form-urlencoded',
    );
    expect(res.json()).toMatchObject({ level: 'disabled' });
  });

  it('a rejected PUT changes nothing (better than GitLab, which half-saves)', async () => {
    const { token, user } = await newUser();
    await request(token, 'PUT', '/notification_settings?level=custom&new_note=true');
    const before = await request(token, 'GET', '/notification_settings');
    const rows = () => db.selectFrom('notification_settings').selectAll().where('user_id', '=', user.id).execute();
    const rowsBefore = await rows();
    for (const [url, payload] of [
      ['/notification_settings?level=watch&new_issue=true&notification_email=nobody@example.com', undefined],
      ['/notification_settings?level=bogus&new_issue=true', undefined],
      ['/notification_settings?level=watch&new_issue=true&new_note=nah', undefined],
      ['/notification_settings', { level: 'watch', new_note: false, notification_email: 'nobody@example.com' }],
    ] as const) {
      const res = await request(token, 'PUT', url, payload);
      expect(res.statusCode).toBe(400);
    }
    expect((await request(token, 'GET', '/notification_settings')).body).toBe(before.body);
    expect(await rows()).toEqual(rowsBefore);
  });

  it('a rejected first PUT creates no row', async () => {
    const { token, user } = await newUser();
    const res = await request(token, 'PUT', '/notification_settings?level=watch&notification_email=nobody@example.com');
    expect(res.statusCode).toBe(400);
    expect(await db.selectFrom('notification_settings').select('id').where('user_id', '=', user.id).execute()).toEqual(
      [],
    );
  });

  it('concurrent PUTs are atomic: one row, and its flags all come from one request', async () => {
    const { token, user } = await newUser();
    const puts = Array.from({ length: 16 }, (_, i) => {
      const value = i % 2 === 0;
      return request(token, 'PUT', '/notification_settings', {
        level: value ? 'custom' : 'watch',
        ...allEvents(value),
      });
    });
    const responses = await Promise.all(puts);
    expect(responses.map((r) => r.statusCode)).toEqual(Array(16).fill(200));
    const rows = await db.selectFrom('notification_settings').selectAll().where('user_id', '=', user.id).execute();
    expect(rows).toHaveLength(1);
    const flags = NOTIFICATION_EVENTS.map((e) => rows[0][e]);
    expect(new Set(flags).size).toBe(1);
    expect(rows[0].level).toBe(flags[0] ? 'custom' : 'watch');
  });
});

describe.each([
  ['groups', 'Group'],
  ['projects', 'Project'],
] as const)('/%s/:id/notification_settings', (kind, what) => {
  const target = () =>
    kind === 'groups' ? { id: sub.id, path: 'my-group/sub' } : { id: project.id, path: 'my-group/sub/my-project' };

  it('defaults to {"level":"global"}, by numeric id and by URL-encoded full path (any case)', async () => {
    const { token } = await newUser();
    const { id, path } = target();
    for (const ref of [String(id), encodeURIComponent(path), encodeURIComponent(path.toUpperCase())]) {
      const res = await request(token, 'GET', `/${kind}/${ref}/notification_settings`);
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe('{"level":"global"}');
    }
  });

  it('PUT custom with events, reflected by GET through the other kind of :id', async () => {
    const { token } = await newUser();
    const { id, path } = target();
    let res = await request(token, 'PUT', `/${kind}/${encodeURIComponent(path)}/notification_settings`, {
      level: 'custom',
      new_merge_request: true,
      success_pipeline: 'true',
    });
    expect(res.statusCode).toBe(200);
    const expected = { level: 'custom', events: allEvents(false, { new_merge_request: true, success_pipeline: true }) };
    expect(res.json()).toEqual(expected);
    res = await request(token, 'GET', `/${kind}/${id}/notification_settings`);
    expect(res.json()).toEqual(expected);
    // A project's notification_email parameter is ignored, as in GitLab; a group's is checked
    // (contract §4: group-level notification e-mail, verified e-mails only) and a bad one changes nothing.
    res = await request(
      token,
      'PUT',
      `/${kind}/${id}/notification_settings?level=watch&notification_email=nobody@example.com`,
    );
    if (kind === 'groups') {
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ message: { notification_email: ['must be an email you have verified'] } });
      res = await request(token, 'PUT', `/${kind}/${id}/notification_settings?level=watch`);
    }
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('{"level":"watch"}');
    // The global setting is untouched.
    expect((await request(token, 'GET', '/notification_settings')).json().level).toBe('participating');
  });

  it('accepts, stores and returns all 19 flags, including the 7 of GitLab 17/18 (literal names)', async () => {
    const { token } = await newUser();
    const { id } = target();
    const gitlab18 = {
      new_release: true,
      issue_due: true,
      push_to_merge_request: true,
      change_reviewer_merge_request: true,
      fixed_pipeline: true,
      moved_project: true,
      merge_when_pipeline_succeeds: true,
    };
    const res = await request(token, 'PUT', `/${kind}/${id}/notification_settings`, { level: 'custom', ...gitlab18 });
    expect(res.statusCode).toBe(200);
    const expected = {
      level: 'custom',
      events: {
        new_release: true,
        new_note: false,
        new_issue: false,
        reopen_issue: false,
        close_issue: false,
        reassign_issue: false,
        issue_due: true,
        new_merge_request: false,
        push_to_merge_request: true,
        reopen_merge_request: false,
        close_merge_request: false,
        reassign_merge_request: false,
        change_reviewer_merge_request: true,
        merge_merge_request: false,
        failed_pipeline: false,
        fixed_pipeline: true,
        success_pipeline: false,
        moved_project: true,
        merge_when_pipeline_succeeds: true,
      },
    };
    // GitLab's order of the events, byte for byte.
    expect(res.body).toBe(JSON.stringify(expected));
    expect((await request(token, 'GET', `/${kind}/${id}/notification_settings`)).body).toBe(JSON.stringify(expected));
    const bad = await request(token, 'PUT', `/${kind}/${id}/notification_settings?moved_project=maybe&level=watch`);
    expect([bad.statusCode, bad.json()]).toEqual([400, { error: 'moved_project is invalid' }]);
    expect((await request(token, 'GET', `/${kind}/${id}/notification_settings`)).body).toBe(JSON.stringify(expected));
  });

  it('reads parameters from the query string, a form body and a JSON body', async () => {
    const { token } = await newUser();
    const { id } = target();
    const url = `/${kind}/${id}/notification_settings`;
    expect((await request(token, 'PUT', `${url}?level=custom&new_note=1`)).json().events).toEqual(
      allEvents(false, { new_note: true }),
    );
    expect(
      (await request(token, 'PUT', url, 'level=custom&new_issue=true', 'application/x-www-form-urlencoded')).json()
        .events,
    ).toEqual(allEvents(false, { new_note: true, new_issue: true }));
    expect((await request(token, 'PUT', `${url}?level=watch`, { level: 'custom', new_note: false })).json()).toEqual({
      level: 'custom',
      events: allEvents(false, { new_issue: true }),
    });
  });

  it('400s as globally; a rejected PUT changes nothing', async () => {
    const { token } = await newUser();
    const { id } = target();
    await request(token, 'PUT', `/${kind}/${id}/notification_settings?level=disabled`);
    let res = await request(token, 'PUT', `/${kind}/${id}/notification_settings?level=nope&new_note=true`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ message: "'nope' is not a valid level" });
    res = await request(token, 'PUT', `/${kind}/${id}/notification_settings?level=watch&new_note=perhaps`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'new_note is invalid' });
    expect((await request(token, 'GET', `/${kind}/${id}/notification_settings`)).body).toBe('{"level":"disabled"}');
  });

  it(`404 {"message":"404 ${what} Not Found"} for a missing id or path`, async () => {
    const { token } = await newUser();
    for (const ref of ['999999', 'no-such%2Fthing', encodeURIComponent('my-group/sub/nope'), '99999999999999999999']) {
      for (const method of ['GET', 'PUT'] as const) {
        const res = await request(token, method, `/${kind}/${ref}/notification_settings?level=watch`);
        expect([ref, method, res.statusCode, res.json()]).toEqual([
          ref,
          method,
          404,
          { message: `404 ${what} Not Found` },
        ]);
      }
    }
  });

  it('concurrent PUTs on one source leave exactly one row', async () => {
    const { token, user } = await newUser();
    const { id } = target();
    const levels = ['watch', 'mention', 'disabled', 'custom', 'participating', 'global'];
    const res = await Promise.all(
      levels.map((level) => request(token, 'PUT', `/${kind}/${id}/notification_settings?level=${level}`)),
    );
    expect(res.map((r) => r.statusCode)).toEqual(levels.map(() => 200));
    const column = kind === 'groups' ? 'group_id' : 'project_id';
    const rows = await db
      .selectFrom('notification_settings')
      .select('level')
      .where('user_id', '=', user.id)
      .where(column, '=', id)
      .execute();
    expect(rows).toHaveLength(1);
    expect(levels).toContain(rows[0].level);
  });
});

it('settings of one source never leak into another', async () => {
  const { token } = await newUser();
  await request(token, 'PUT', `/groups/${group.id}/notification_settings?level=watch`);
  expect((await request(token, 'GET', `/groups/${sub.id}/notification_settings`)).body).toBe('{"level":"global"}');
  expect((await request(token, 'GET', `/projects/${project.id}/notification_settings`)).body).toBe(
    '{"level":"global"}',
  );
  expect((await request(token, 'GET', `/groups/${group.id}/notification_settings`)).body).toBe('{"level":"watch"}');
});
