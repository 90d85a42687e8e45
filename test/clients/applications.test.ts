// The Applications API through real GitLab clients, unmodified: Debian's python-gitlab (3.12:
// gl.applications create/list/delete, and raw gl.http_* calls for renew-secret and update) and
// @gitbeaker/rest (Applications.create/all/remove). python-gitlab is skipped, with the reason,
// where it is not installed.
import { join } from 'node:path';
import { Gitlab } from '@gitbeaker/rest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, User } from '../../service/db/schema';
import { makePat, makeUser, serveOnOwnUrl } from '../support/api-fixtures';
import { execFileAsync as run, PYTHON, pythonGitlabVersion as version } from '../support/python-gitlab';
import { createTestDatabase, resetDatabase } from '../support/db';

let db: Db;
let url: string;
let admin: User;
let adminPat: string;
let userPat: string;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  ({ url } = await serveOnOwnUrl(db));
});

async function fresh() {
  await resetDatabase(db);
  admin = await makeUser(db, 'root', { admin: true });
  adminPat = await makePat(db, admin, ['api']);
  userPat = await makePat(db, await makeUser(db, 'alice'), ['api']);
}

const appRows = () =>
  db.selectFrom('oauth_applications').select(['id', 'uid', 'name', 'scopes']).orderBy('id').execute();

describe.skipIf(!version)('python-gitlab (Debian python3-gitlab) gl.applications', () => {
  it('create (the secret once), list, renew-secret and update by http_*, delete; errors as its exceptions', async () => {
    await fresh();
    const { stdout } = await run(PYTHON, [join(__dirname, 'applications.py')], {
      env: { ...process.env, LANYARD_URL: url, LANYARD_ADMIN_PAT: adminPat, LANYARD_USER_PAT: userPat },
    });
    const out = JSON.parse(stdout);
    const base = {
      id: expect.any(Number),
      application_id: expect.stringMatching(/^[0-9a-f]{64}$/),
      application_name: 'Terraform',
      callback_url: 'https://ci.example/cb',
      confidential: true,
      scopes: ['api', 'read_user'],
      // Beyond GitLab, on every application (logout: docs/logout.md); clients ignore them.
      post_logout_redirect_uris: [],
      backchannel_logout_uri: null,
      backchannel_logout_session_required: false,
    };
    expect(out.created).toEqual({ ...base, secret: expect.stringMatching(/^gloas-[0-9a-f]{64}$/) });
    const { secret, ...listed } = out.created;
    expect(out.listed).toEqual([listed]);
    expect(out.renewed).toEqual({ ...listed, secret: expect.stringMatching(/^gloas-[0-9a-f]{64}$/) });
    expect(out.renewed.secret).not.toBe(secret);
    expect(out.updated).toEqual({ ...listed, application_name: 'Terraform 2', scopes: ['read_api'] });
    expect(out.after_delete).toEqual([]);
    expect(out.delete_missing).toEqual({ code: 404, message: '404 Application Not Found' });
    expect(out.create_bad).toEqual({ code: 400, message: { redirect_uri: ['cannot contain a fragment.'] } });
    expect(out.list_as_user).toEqual({ code: 403, message: '403 Forbidden' });
    expect(await appRows()).toEqual([]);
    const actions = await db
      .selectFrom('audit_events')
      .select(['actor', 'action'])
      .where('target_type', '=', 'application')
      .orderBy('id')
      .execute();
    expect(actions).toEqual(
      [
        'application.register',
        'application.rotate_secret',
        'application.update',
        'application.register',
        'application.delete',
        'application.delete',
      ].map((action) => ({ actor: 'user:root', action })),
    );
  });
});

describe('@gitbeaker/rest Applications', () => {
  it('create, all, remove; a non-administrator gets 403', async () => {
    await fresh();
    const api = new Gitlab({ host: url, token: adminPat });
    const created = await api.Applications.create('Gitbeaker', 'https://gb.example/cb', 'read_user', {
      confidential: false,
    });
    expect(created).toEqual({
      id: expect.any(Number),
      application_id: expect.stringMatching(/^[0-9a-f]{64}$/),
      application_name: 'Gitbeaker',
      callback_url: 'https://gb.example/cb',
      confidential: false,
      scopes: ['read_user'],
      post_logout_redirect_uris: [],
      backchannel_logout_uri: null,
      backchannel_logout_session_required: false,
      secret: expect.stringMatching(/^gloas-[0-9a-f]{64}$/),
    });
    const { secret: _secret, ...listed } = created;
    expect(await api.Applications.all()).toEqual([listed]);
    await api.Applications.remove(created.id as number);
    expect(await api.Applications.all()).toEqual([]);
    const asUser = new Gitlab({ host: url, token: userPat });
    await expect(asUser.Applications.all()).rejects.toMatchObject({ cause: { response: { status: 403 } } });
    expect(await appRows()).toEqual([]);
  });
});
