// The account lists that can grow past 20 rows page by 20 (`?page=N`), through the real app: 25
// rows are 20 on page 1 and 5 on page 2 with exact Previous/Next links; a bad page number shows the
// first page; a page past the last shows no rows and links back to the last one.
import { beforeEach, describe, expect, it } from 'vitest';
import { issueAccessToken } from '../../service/domain/oauth-tokens';
import { randomHex, sha256Hex } from '../../service/domain/secrets';
import { addMember, createGroup, createProject } from '../support/api-fixtures';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let web: WebClient;
let alice: Awaited<ReturnType<typeof makeUser>>['user'];

beforeEach(async () => {
  await resetDatabase(f.db, ['service_keys']);
  alice = (await makeUser(f.db, 'alice')).user;
  web = new WebClient(f.app);
  expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
});

const two = (n: number) => String(n).padStart(2, '0');
const BAD_PAGES = ['0', '-1', 'abc', '1.5', '100000000000000000000', ''];

/** The navigation under a list, as one string (or undefined when there is none). */
const navOf = (body: string, label: string) =>
  new RegExp(`<nav class="pagination" aria-label="${label}">.*?</nav>`).exec(body)?.[0];

/** Page 1 and 2 of a 25-row list, every bad page number, and a page past the end. */
async function expectPaged(opts: {
  path: string;
  label: string;
  cells: (body: string) => string[];
  first: string[];
  second: string[];
  param?: string;
  prefix?: string;
}) {
  const { path, label, cells, param = 'page', prefix = '' } = opts;
  const at = (n: number) => `${path}?${prefix}${param}=${n}`;
  const one = await web.get(path);
  expect(one.statusCode).toBe(200);
  expect(cells(one.body)).toEqual(opts.first);
  expect(navOf(one.body, label)).toBe(
    `<nav class="pagination" aria-label="${label}"><span aria-current="page">Page 1 of 2</span><a href="${at(2).replace(/&/g, '&amp;')}" rel="next">Next</a></nav>`,
  );
  const second = await web.get(at(2));
  expect(second.statusCode).toBe(200);
  expect(cells(second.body)).toEqual(opts.second);
  const back = prefix === '' ? path : `${path}?${prefix.slice(0, -1)}`;
  expect(navOf(second.body, label)).toBe(
    `<nav class="pagination" aria-label="${label}"><a href="${back.replace(/&/g, '&amp;')}" rel="prev">Previous</a><span aria-current="page">Page 2 of 2</span></nav>`,
  );
  for (const bad of BAD_PAGES) {
    const res = await web.get(`${path}?${prefix}${param}=${encodeURIComponent(bad)}`);
    expect({ bad, status: res.statusCode, cells: cells(res.body) }).toEqual({ bad, status: 200, cells: opts.first });
  }
  const past = await web.get(at(9));
  expect(past.statusCode).toBe(200);
  expect(cells(past.body)).toEqual([]);
  expect(navOf(past.body, label)).toBe(
    `<nav class="pagination" aria-label="${label}"><a href="${at(2).replace(/&/g, '&amp;')}" rel="prev">Previous</a><span aria-current="page">Page 9 of 2</span></nav>`,
  );
}

describe('account lists page by 20', () => {
  it('e-mails: the primary address is row 1 of 25', async () => {
    await f.db
      .insertInto('user_emails')
      .values(
        Array.from({ length: 24 }, (_, i) => ({
          user_id: alice.id,
          email: `alice${two(i + 1)}@example.com`,
          confirmed_at: new Date(),
        })),
      )
      .execute();
    const cells = (body: string) =>
      [...body.matchAll(/<td data-label="Address" class="address">([^<]+)<\/td>/g)].map((m) => m[1]);
    const extra = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => `alice${two(from + i)}@example.com`);
    await expectPaged({
      path: '/-/profile/emails',
      label: 'E-mail addresses pages',
      cells,
      first: [alice.email, ...extra(1, 19)],
      second: extra(20, 24),
    });
    expect((await web.get('/-/profile/emails?page=2')).body).toContain('Your e-mail addresses (25)');
    // The remove confirm page finds an address that is not on the first page.
    const last = await f.db
      .selectFrom('user_emails')
      .select('id')
      .where('email', '=', 'alice24@example.com')
      .executeTakeFirstOrThrow();
    const confirm = await web.get(`/-/profile/emails/${last.id}/delete`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('Remove <strong>alice24@example.com</strong> from your account?');
  });

  it('active sessions: this one first, 24 others after it', async () => {
    const now = Date.now();
    await f.db
      .insertInto('web_sessions')
      .values(
        Array.from({ length: 24 }, (_, i) => ({
          id_digest: sha256Hex(randomHex()),
          user_id: alice.id,
          data: JSON.stringify({ user_id: alice.id, sid: `${two(i + 1)}${'0'.repeat(30)}` }),
          expires_at: new Date(now + 86_400_000),
          ip_address: `192.0.2.${i + 1}`,
          last_seen_at: new Date(now - (i + 1) * 60_000),
        })),
      )
      .execute();
    const cells = (body: string) =>
      [...body.matchAll(/<td data-label="Address" class="address">([^<]+)<\/td>/g)].map((m) => m[1]);
    const addresses = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => `192.0.2.${from + i}`);
    const current = cells((await web.get('/-/user_settings/active_sessions')).body)[0];
    await expectPaged({
      path: '/-/user_settings/active_sessions',
      label: 'Active sessions pages',
      cells,
      first: [current, ...addresses(1, 19)],
      second: addresses(20, 24),
    });
    const second = (await web.get('/-/user_settings/active_sessions?page=2')).body;
    expect(second).not.toContain('This session');
    expect(second).toContain('Revoke all other sessions');
    // The revoke confirm page finds a session that is not on the first page.
    expect((await web.get(`/-/user_settings/active_sessions/24${'0'.repeat(30)}/revoke`)).body).toContain(
      'Sign out <strong>Unknown browser on Unknown OS</strong> at 192.0.2.24?',
    );
  });

  it('authorized applications: by name, one row per application', async () => {
    const uids: string[] = [];
    for (let i = 1; i <= 25; i++) {
      const app = await makeApp(f.db, { name: `App ${two(i)}` });
      uids.push(app.clientId);
      for (const scopes of [['read_user'], ['api']])
        await issueAccessToken(f.db, {
          applicationId: app.application.id,
          userId: alice.id,
          scopes,
          withRefreshToken: true,
        });
    }
    const path = '/-/user_settings/authorized_applications';
    const cells = (body: string) => [...body.matchAll(/<td data-label="Name">([^<]+)<\/td>/g)].map((m) => m[1]);
    const names = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `App ${two(from + i)}`);
    await expectPaged({
      path,
      label: 'Authorized applications pages',
      cells,
      first: names(1, 20),
      second: names(21, 25),
    });
    expect((await web.get(`${path}?page=2`)).body).toContain(
      '<td data-label="Name">App 25</td><td data-label="Scopes"><span class="badge">api</span><span class="badge">read_user</span></td>',
    );
    expect((await web.get(`${path}/${uids[24]}/revoke`)).body).toContain('Revoke the access of App 25?');
  });

  it('notifications: groups (`page`) and projects (`project_page`) page on their own', async () => {
    await createGroup(f.db, { path: 'work', visibility: 'private' });
    await addMember(f.db, { group: 'work', username: 'alice', access: 'developer' });
    for (let i = 1; i <= 24; i++) {
      await createGroup(f.db, { path: `g${two(i)}`, visibility: 'private' });
      await addMember(f.db, { group: `g${two(i)}`, username: 'alice', access: 'developer' });
    }
    for (let i = 1; i <= 25; i++) await createProject(f.db, { path: `work/p${two(i)}`, visibility: 'private' });
    const N = '/-/profile/notifications';
    const pathsIn = (body: string, table: string) =>
      [
        ...(new RegExp(`<table class="list" id="${table}-table".*?</table>`, 's').exec(body)?.[0] ?? '').matchAll(
          /<tr data-path="([^"]+)">/g,
        ),
      ].map((m) => m[1]);
    const groups = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `g${two(from + i)}`);
    const projects = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => `work/p${two(from + i)}`);
    await expectPaged({
      path: N,
      label: 'Groups pages',
      cells: (body) => pathsIn(body, 'groups'),
      first: groups(1, 20),
      second: [...groups(21, 24), 'work'],
    });
    await expectPaged({
      path: N,
      label: 'Projects pages',
      param: 'project_page',
      cells: (body) => pathsIn(body, 'projects'),
      first: projects(1, 20),
      second: projects(21, 25),
    });
    // Each list's links keep the other list's page.
    const both = (await web.get(`${N}?page=2&project_page=2`)).body;
    expect(pathsIn(both, 'groups')).toEqual([...groups(21, 24), 'work']);
    expect(pathsIn(both, 'projects')).toEqual(projects(21, 25));
    expect(navOf(both, 'Groups pages')).toBe(
      `<nav class="pagination" aria-label="Groups pages"><a href="${N}?project_page=2" rel="prev">Previous</a><span aria-current="page">Page 2 of 2</span></nav>`,
    );
    expect(navOf(both, 'Projects pages')).toBe(
      `<nav class="pagination" aria-label="Projects pages"><a href="${N}?page=2" rel="prev">Previous</a><span aria-current="page">Page 2 of 2</span></nav>`,
    );
    expect(both).toContain('Groups (25)');
    expect(both).toContain('Projects (25)');
  });

  it('passkeys and security keys on the two-factor page: in the order they were added', async () => {
    await f.db
      .insertInto('webauthn_credentials')
      .values(
        Array.from({ length: 25 }, (_, i) => ({
          user_id: alice.id,
          credential_id: `credential-id-number-${two(i + 1)}`,
          public_key: Buffer.from([i]),
          device_type: 'multiDevice' as const,
          backed_up: true,
          name: `Key ${two(i + 1)}`,
        })),
      )
      .execute();
    const cells = (body: string) => [...body.matchAll(/<tr><td data-label="Name">([^<]+)<\/td>/g)].map((m) => m[1]);
    const names = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `Key ${two(from + i)}`);
    await expectPaged({
      path: '/-/profile/two_factor_auth',
      label: 'Passkeys and security keys pages',
      cells,
      first: names(1, 20),
      second: names(21, 25),
    });
  });

  it('a list that fits on one page has no navigation', async () => {
    for (const path of [
      '/-/profile/emails',
      '/-/user_settings/active_sessions',
      '/-/user_settings/authorized_applications',
      '/-/profile/notifications',
      '/-/profile/two_factor_auth',
    ]) {
      const body = (await web.get(path)).body;
      expect({ path, nav: body.includes('class="pagination"') }).toEqual({ path, nav: false });
    }
  });
});
