// @gitbeaker/rest, unmodified, for the calls python-gitlab makes too: groups and projects by id and
// full path, their pagination across pages (following GitLab's Link headers), the metadata, and a
// group's notification settings after Groups.show. (test/api/gitbeaker.test.ts covers the rest.)
import { Gitlab } from '@gitbeaker/rest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, User } from '../../service/db/schema';
import {
  addMember,
  createGroup,
  createProject,
  makeOAuthToken,
  makePat,
  makeUser,
  serveOnOwnUrl,
} from '../support/api-fixtures';
import { createTestDatabase } from '../support/db';

let db: Db;
let host: string;
let alice: User;
let team: Group;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  ({ url: host } = await serveOnOwnUrl(db));
  alice = await makeUser(db, 'alice');
  await createGroup(db, { path: 'acme', name: 'Acme', visibility: 'public' });
  team = await createGroup(db, { path: 'team', name: 'Team', parent: 'acme', visibility: 'private' });
  await createGroup(db, { path: 'hidden', name: 'Hidden', visibility: 'private' });
  await createGroup(db, { path: 'open', name: 'Open', visibility: 'internal' });
  await createProject(db, { path: 'acme/web', name: 'Web', visibility: 'public' });
  await createProject(db, { path: 'acme/team/api', name: 'API', visibility: 'private' });
  await createProject(db, { path: 'open/tools', name: 'Tools', visibility: 'internal' });
  await addMember(db, { group: 'acme/team', username: 'alice', access: 'maintainer' });
});

describe('@gitbeaker/rest', () => {
  it('Groups.show and Projects.show by full path and id, then the group notification settings', async () => {
    const api = new Gitlab({ host, token: await makePat(db, alice, ['api']) });
    const group = await api.Groups.show('acme/team');
    expect(group).toMatchObject({
      id: team.id,
      full_path: 'acme/team',
      full_name: 'Acme / Team',
      parent_id: team.parent_id,
    });
    expect(await api.Groups.show(team.id)).toEqual(group);
    const project = await api.Projects.show('acme/team/api');
    expect(project).toMatchObject({
      path_with_namespace: 'acme/team/api',
      name_with_namespace: 'Acme / Team / API',
      namespace: { id: team.id, kind: 'group', full_path: 'acme/team' },
    });
    // gitbeaker's types predate GitLab 17's flags; it sends any option it is given (camelCase → snake_case).
    const options = { groupId: group.id, level: 'custom' as const, newRelease: true };
    expect(await api.NotificationSettings.edit(options)).toMatchObject({
      level: 'custom',
      events: { new_release: true, moved_project: false },
    });
  });

  it('Groups.all and Projects.all follow the pagination across pages', async () => {
    const api = new Gitlab({ host, oauthToken: await makeOAuthToken(db, alice, ['read_api']) });
    const groups = await api.Groups.all({ perPage: 1 });
    expect(groups.map((g) => g.full_path)).toEqual(['acme', 'open', 'acme/team']);
    const projects = await api.Projects.all({ perPage: 2 });
    expect(projects.map((p) => p.path_with_namespace)).toEqual(['open/tools', 'acme/team/api', 'acme/web']);
    const page = await api.Groups.all({ perPage: 2, page: 2, showExpanded: true, pagination: 'offset' });
    expect(page.data.map((g) => g.full_path)).toEqual(['acme/team']);
    expect(page.paginationInfo).toEqual({ total: 3, next: null, current: 2, previous: 1, perPage: 2, totalPages: 2 });
  });

  it('Metadata.show', async () => {
    const api = new Gitlab({ host, token: await makePat(db, alice, ['read_user']) });
    expect(await api.Metadata.show()).toMatchObject({ version: '17.11.0', enterprise: false, kas: { enabled: false } });
  });
});
