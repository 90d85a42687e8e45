// Debian's python-gitlab (3.12, and its CLI through `python3 -m gitlab`), unmodified, against a real
// HTTP server: the client library people already have must work (it parses only an exact
// `Content-Type: application/json`). Skipped, with the reason, where python-gitlab is not installed.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, Project, User } from '../../service/db/schema';
import {
  addMember,
  createGroup,
  createProject,
  makeOAuthToken,
  makePat,
  makeUser,
  serveOnOwnUrl,
} from '../support/api-fixtures';
import { execFileAsync as run, PYTHON, pythonGitlabVersion as version } from '../support/python-gitlab';
import { createTestDatabase } from '../support/db';

let db: Db;
let url: string;
let alice: User;
let team: Group;
let api: Project;
let pat: string;
let oauth: string;

describe.skipIf(!version)('python-gitlab (Debian python3-gitlab)', () => {
  beforeAll(async () => {
    db = (await createTestDatabase()).db;
    // PUBLIC_URL is the server's own address: python-gitlab follows GitLab's absolute Link URLs.
    ({ url } = await serveOnOwnUrl(db));
    alice = await makeUser(db, 'alice');
    await createGroup(db, { path: 'acme', name: 'Acme', visibility: 'public' });
    team = await createGroup(db, { path: 'team', name: 'Team', parent: 'acme', visibility: 'private' });
    await createGroup(db, { path: 'hidden', name: 'Hidden', visibility: 'private' });
    await createGroup(db, { path: 'open', name: 'Open', visibility: 'internal' });
    await createGroup(db, { path: 'zeta', name: 'Zeta', visibility: 'public' });
    await createProject(db, { path: 'acme/web', name: 'Web', visibility: 'public' });
    api = await createProject(db, { path: 'acme/team/api', name: 'API', visibility: 'private' });
    await addMember(db, { group: 'acme/team', username: 'alice', access: 'developer' });
    pat = await makePat(db, alice, ['api']);
    oauth = await makeOAuthToken(db, alice, ['api']);
  });

  it('is 3.12, the version whose exact Content-Type check this guards', () => {
    expect(version).toMatch(/^3\./);
  });

  it('gl.auth (PAT and OAuth), gl.version, notification settings, groups/projects get and list', async () => {
    const { stdout } = await run(PYTHON, [join(__dirname, 'python-gitlab.py')], {
      env: { ...process.env, LANYARD_URL: url, LANYARD_PAT: pat, LANYARD_OAUTH: oauth, PYTHONWARNINGS: 'error' },
    });
    const out = JSON.parse(stdout);
    const none = {
      new_release: false,
      new_note: false,
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
    };
    expect(out).toEqual({
      python_gitlab: version,
      auth_pat: { username: 'alice', id: alice.id, theme_id: 3 },
      auth_oauth: { username: 'alice' },
      version: ['17.11.0', 'lanyard-0.1.0'],
      global_before: { level: 'participating', notification_email: 'alice@example.com' },
      global_after: {
        level: 'custom',
        events: { ...none, new_release: true, moved_project: true },
        notification_email: 'alice@example.com',
      },
      group: { id: team.id, full_path: 'acme/team', full_name: 'Acme / Team' },
      group_before: { level: 'global' },
      group_after: { level: 'custom', events: { ...none, fixed_pipeline: true } },
      project: {
        id: api.id,
        path_with_namespace: 'acme/team/api',
        name_with_namespace: 'Acme / Team / API',
        namespace: {
          id: team.id,
          name: 'Team',
          path: 'team',
          kind: 'group',
          full_path: 'acme/team',
          parent_id: team.parent_id,
          avatar_url: null,
          web_url: `${url}/groups/acme/team`,
        },
      },
      project_after: { level: 'watch' },
      groups_all: ['acme', 'open', 'acme/team', 'zeta'],
      groups_iterator: { total: 4, total_pages: 2, per_page: 2, paths: ['acme', 'open', 'acme/team', 'zeta'] },
      groups_page2: ['acme/team', 'zeta'],
      projects_all: ['acme/team/api', 'acme/web'],
      hidden: { status: 404, message: '404 Group Not Found' },
    });
  });

  it('the CLI (python3 -m gitlab -c CONFIG): current-user, group get/list, project get, notification settings', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lanyard-python-gitlab-'));
    const config = join(dir, 'python-gitlab.cfg');
    writeFileSync(
      config,
      `[global]\ndefault = lanyard\ntimeout = 10\n\n[lanyard]\nurl = ${url}\nprivate_token = ${pat}\n`,
    );
    const cli = async (...args: string[]) =>
      JSON.parse((await run(PYTHON, ['-m', 'gitlab', '-c', config, '-o', 'json', ...args])).stdout);
    expect(await cli('current-user', 'get')).toMatchObject({ username: 'alice', id: alice.id });
    expect(await cli('group', 'get', '--id', 'acme/team')).toMatchObject({ id: team.id, full_name: 'Acme / Team' });
    expect((await cli('group', 'list', '--get-all')).map((g: { full_path: string }) => g.full_path)).toEqual([
      'acme',
      'open',
      'acme/team',
      'zeta',
    ]);
    expect(await cli('project', 'get', '--id', 'acme/team/api')).toMatchObject({
      id: api.id,
      name_with_namespace: 'Acme / Team / API',
    });
    // (python-gitlab 3.12's CLI cannot get group-notification-settings: its own bug, "got multiple
    // values for keyword argument 'id'"; the library calls above cover those routes.)
    await cli('notification-settings', 'update', '--level', 'mention');
    expect(await cli('notification-settings', 'get')).toEqual({
      level: 'mention',
      notification_email: 'alice@example.com',
    });
  });
});
