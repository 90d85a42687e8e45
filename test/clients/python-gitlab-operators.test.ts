// Debian's python-gitlab 3.12, unmodified, as an operator uses it (issue 23): users.list/get,
// block/unblock, a user's personal_access_tokens.create, gl.personal_access_tokens list/delete and
// (through the same session's gl.http_get/http_post, where 3.12 has no method) get, self and
// rotate — the rotation chain rule included — and gl.audit_events. Skipped, with the reason,
// where python-gitlab is not installed.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, User } from '../../service/db/schema';
import { makePat, makeUser, serveOnOwnUrl } from '../support/api-fixtures';
import { execFileAsync as run, PYTHON, pythonGitlabVersion as version } from '../support/python-gitlab';
import { createTestDatabase } from '../support/db';

let db: Db;
let url: string;
let bob: User;
let adminPat: string;
let alicePat: string;
const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);

describe.skipIf(!version)('python-gitlab (Debian python3-gitlab) as an operator', () => {
  beforeAll(async () => {
    db = (await createTestDatabase()).db;
    ({ url } = await serveOnOwnUrl(db));
    const root = await makeUser(db, 'root', { admin: true });
    const alice = await makeUser(db, 'alice');
    bob = await makeUser(db, 'bob');
    adminPat = await makePat(db, root, ['api']);
    alicePat = await makePat(db, alice, ['api']);
  });

  it('users, tokens (rotation chain included), block/unblock and the audit trail', async () => {
    const { stdout } = await run(PYTHON, [join(__dirname, 'python-gitlab-operators.py')], {
      env: {
        ...process.env,
        LANYARD_URL: url,
        LANYARD_ADMIN_PAT: adminPat,
        LANYARD_USER_PAT: alicePat,
        BOB_ID: String(bob.id),
        EXPIRES_AT: expiresAt,
        PYTHONWARNINGS: 'error',
      },
    });
    const out = JSON.parse(stdout);
    const ids = (
      await db.selectFrom('personal_access_tokens').select('id').where('user_id', '=', bob.id).orderBy('id').execute()
    ).map((r) => r.id);
    // python-gitlab reports the `error` member of GitLab's invalid_token body.
    const revokedMessage = { status: 401, message: 'invalid_token' };
    expect(out).toEqual({
      users_list_admin: [{ id: bob.id, username: 'bob', is_admin: false }],
      users_list_public_keys: ['avatar_url', 'id', 'locked', 'name', 'state', 'username', 'web_url'],
      users_get: { username: 'bob', email: 'bob@example.com', state: 'active', highest_role: 0 },
      users_all: ['bob', 'alice', 'root'],
      created: { name: 'ci', scopes: ['api', 'read_user'], expires_at: expiresAt, user_id: bob.id },
      created_works: 'bob',
      pat_list: [{ id: ids[0], name: 'ci', active: true }],
      pat_get: { id: ids[0], name: 'ci', revoked: false },
      pat_self: true,
      rotated: { ids_increase: true, third_expires_at: expiresAt, third_works: 'bob' },
      first_again: revokedMessage,
      third_after: revokedMessage,
      chain_revoked: [true, true, true],
      deleted: true,
      object_deleted: revokedMessage,
      delete_foreign: { status: 400, message: '400 Bad request' },
      block: [true, 'blocked', null],
      blocked_token: { status: 403, message: '403 Forbidden' },
      unblock: [true, 'active', false],
      unblocked_token: 'bob',
      block_as_user: { status: 403, message: '403 Forbidden' },
      // Newest first; the no-op block and unblock recorded nothing.
      audit_latest: ['user.unblock', 'user.block', 'personal_access_token.create'],
      audit_get: expect.objectContaining({ entity_type: 'User', entity_id: bob.id }),
      audit_bob: [
        'personal_access_token.create',
        'personal_access_token.revoke',
        'personal_access_token.revoke_family',
        'personal_access_token.rotate',
        'user.block',
        'user.create',
        'user.unblock',
      ],
      audit_as_user: { status: 403, message: '403 Forbidden' },
    });
  });
});
