// Tables fit the terminal: every list command, given realistically long data, prints no line wider
// than 80 columns off a terminal (files, pipes) and uses a wider terminal's columns when it has
// them. Wrapped cells keep every word; long App IDs are cut with "…".
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import { createTestDatabase } from '../support/db';
import { runIn } from './support';

let db: Db;
const PASSWORD = 'correct horse battery staple';
const run = (argv: string[], options?: Parameters<typeof runIn>[2]) => runIn(db, argv, options);
const ok = async (argv: string[], options?: Parameters<typeof runIn>[2]) => {
  const res = await run(argv, options);
  expect(res.err).toBe('');
  expect(res.code).toBe(0);
  return res;
};
const widest = (out: string) =>
  Math.max(
    ...out
      .trimEnd()
      .split('\n')
      .map((l) => [...l].length),
  );
/** Every whitespace-separated word of the output, as a multiset joined for comparison. */
const words = (out: string) => out.split(/\s+/).filter(Boolean);
/** A column read top to bottom below its header, whitespace removed (cells wrap inside it). */
function column(out: string, header: string): string {
  const lines = out.trimEnd().split('\n');
  const headers = [...lines[0].matchAll(/\S+(?: \S+)*/g)];
  const at = headers.findIndex((m) => m[0] === header);
  const [from, to] = [headers[at].index, headers[at + 1]?.index];
  return lines
    .slice(1)
    .map((l) => l.slice(from, to))
    .join('')
    .replace(/\s+/g, '');
}

let appId: string;
beforeAll(async () => {
  ({ db } = await createTestDatabase());
  for (const [username, name] of [
    ['maximiliana.featherstonehaugh', 'Maximiliana Bartholomew-Featherstonehaugh von Richthofen'],
    ['bob', 'Bob'],
  ]) {
    await ok(
      [
        'users',
        'create',
        '--username',
        username,
        '--email',
        `${username}@engineering.example-corporation.com`,
        '--name',
        name,
        '--password-stdin',
        '--admin',
      ],
      { stdin: PASSWORD },
    );
  }
  const app = await ok([
    'apps',
    'register',
    '--name',
    'Continuous Integration and Deployment Dashboard (production)',
    '--redirect-uri',
    'https://ci.engineering.example-corporation.com/users/auth/gitlab/callback',
    '--redirect-uri',
    'https://ci-staging.engineering.example-corporation.com/users/auth/gitlab/callback',
    '--scopes',
    'api read_api read_user openid profile email',
    '--owner',
    'maximiliana.featherstonehaugh',
    '--trusted',
    '--json',
  ]);
  appId = app.json.application_id;
  await ok(['apps', 'register', '--name', 'Grafana', '--redirect-uri', 'http://127.0.0.1:3001/login', '--public']);
  await ok([
    'tokens',
    'create',
    '--user',
    'maximiliana.featherstonehaugh',
    '--name',
    'nightly backup of every repository in the engineering organisation',
    '--scopes',
    'api read_api read_user',
    '--expires-at',
    '2099-12-31',
  ]);
});

const LONG = 'engineering-infrastructure-and-developer-productivity';
const PROJECT = `${LONG}/continuous-integration-platform-team/repository-mirroring-service`;

describe('list commands fit 80 columns off a terminal', () => {
  beforeAll(async () => {
    await ok(['groups', 'create', '--path', LONG, '--name', 'Engineering Infrastructure and Developer Productivity']);
    await ok(['groups', 'create', '--path', 'continuous-integration-platform-team', '--parent', LONG]);
    await ok(['projects', 'create', '--path', PROJECT, '--name', 'Repository mirroring service (GitLab to GitHub)']);
    await ok(['members', 'add', '--project', PROJECT, '--user', 'maximiliana.featherstonehaugh', '--access', 'owner']);
  });

  for (const argv of [
    ['users', 'list'],
    ['apps', 'list'],
    ['tokens', 'list'],
    ['db', 'status'],
    ['groups', 'list'],
    ['projects', 'list'],
    ['members', 'list', '--project', PROJECT],
    ['audit', 'list', '--per-page', '100'],
  ]) {
    it(argv.join(' '), async () => {
      const { out } = await ok(argv);
      expect(widest(out), out).toBeLessThanOrEqual(80);
      // Wide data, so the table really had to give way (the natural table is wider than 80).
      const wide = await ok(argv, { columns: 1000 });
      if (argv[0] !== 'db') expect(widest(wide.out)).toBeGreaterThan(80);
    });
  }

  it('wrapped cells keep every word; the App ID is cut with … and the short id is there to use', async () => {
    const users = await ok(['users', 'list']);
    // A cell wraps within its own column: read down the NAME column and the name is whole.
    expect(column(users.out, 'NAME')).toBe('MaximilianaBartholomew-FeatherstonehaughvonRichthofenBob');
    expect(users.out.trimEnd().split('\n').length).toBeGreaterThan(3);
    const apps = await ok(['apps', 'list']);
    const joined = column(apps.out, 'REDIRECT URIS');
    expect(joined).toContain('https://ci.engineering.example-corporation.com/users/auth/gitlab/callback');
    expect(joined).toContain('https://ci-staging.engineering.example-corporation.com/users/auth/gitlab/callback');
    expect(apps.out).toContain(`${appId.slice(0, 6)}`);
    expect(apps.out).not.toContain(appId);
    expect(apps.out).toMatch(/[0-9a-f]…/);
    expect(words(apps.out)).toEqual(expect.arrayContaining(['confidential', 'trusted', 'public']));
    const tokens = await ok(['tokens', 'list']);
    for (const word of ['nightly', 'backup', 'organisation', '2099-12-31']) expect(words(tokens.out)).toContain(word);
  });

  it("a terminal's own width is used: 120 columns, and a narrow 60", async () => {
    const wide = await ok(['apps', 'list'], { columns: 120 });
    expect(widest(wide.out)).toBeLessThanOrEqual(120);
    expect(widest(wide.out)).toBeGreaterThan(80);
    const narrow = await ok(['users', 'list'], { columns: 60 });
    expect(widest(narrow.out)).toBeLessThanOrEqual(60);
  });

  it('--json is unchanged by the width: whole values', async () => {
    const json = (await ok(['apps', 'list', '--json'])).json;
    expect(json[0].application_id).toBe(appId);
    expect(json[0].redirect_uris).toHaveLength(2);
  });
});
