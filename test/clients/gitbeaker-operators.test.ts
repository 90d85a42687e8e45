// @gitbeaker/rest, unmodified, as an operator uses it (issue 23): Users.all({ username }) / show /
// block / unblock, PersonalAccessTokens create / all / show (by id and self) / rotate / remove —
// the rotation chain rule included — and AuditEvents.all / show.
import { Gitlab } from '@gitbeaker/rest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, User } from '../../service/db/schema';
import { makePat, makeUser, serveOnOwnUrl } from '../support/api-fixtures';
import { createTestDatabase } from '../support/db';

let db: Db;
let host: string;
let bob: User;
let admin: InstanceType<typeof Gitlab>;

const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
/** gitbeaker's error for a refused request: the status and GitLab's body. */
const refusal = async (p: Promise<unknown>) =>
  p.then(
    () => 'no error?!',
    (e: { cause?: { response?: { status: number }; description?: string } }) => ({
      status: e.cause?.response?.status,
      description: e.cause?.description,
    }),
  );
const whoAmI = (token: string) => new Gitlab({ host, token }).Users.showCurrentUser().then((u) => u.username);

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  ({ url: host } = await serveOnOwnUrl(db));
  const root = await makeUser(db, 'root', { admin: true });
  await makeUser(db, 'alice');
  bob = await makeUser(db, 'bob');
  admin = new Gitlab({ host, token: await makePat(db, root, ['api']) });
});

describe('@gitbeaker/rest as an operator', () => {
  it('Users.all({ username }), show, block and unblock', async () => {
    const [found] = await admin.Users.all({ username: 'bob' });
    expect([found.id, found.username, (found as { is_admin?: boolean }).is_admin]).toEqual([bob.id, 'bob', false]);
    expect((await admin.Users.show(bob.id)).email).toBe('bob@example.com');
    const token = await makePat(db, bob, ['api']);
    await admin.Users.block(bob.id);
    expect((await admin.Users.show(bob.id)).state).toBe('blocked');
    expect(await refusal(whoAmI(token))).toEqual({ status: 403, description: '403 Forbidden' });
    await admin.Users.unblock(bob.id);
    expect(await whoAmI(token)).toBe('bob');
  });

  it('PersonalAccessTokens: create, all, show, rotate twice, and the stolen first token kills the chain', async () => {
    const created = (await admin.PersonalAccessTokens.create(bob.id, 'ci', ['api'], { expiresAt })) as unknown as {
      id: number;
      token: string;
      expires_at: string;
    };
    expect([created.expires_at, await whoAmI(created.token)]).toEqual([expiresAt, 'bob']);
    const listed = await admin.PersonalAccessTokens.all({ userId: bob.id });
    expect(listed.map((t) => t.name)).toContain('ci');
    const asBob = new Gitlab({ host, token: created.token });
    expect((await asBob.PersonalAccessTokens.show()).id).toBe(created.id);
    expect((await admin.PersonalAccessTokens.show({ tokenId: created.id })).id).toBe(created.id);
    const second = (await asBob.PersonalAccessTokens.rotate(created.id)) as unknown as { id: number; token: string };
    const third = (await admin.PersonalAccessTokens.rotate(second.id)) as unknown as { id: number; token: string };
    expect(await whoAmI(third.token)).toBe('bob');
    expect(await refusal(whoAmI(created.token))).toEqual({ status: 401, description: 'invalid_token' });
    expect(await refusal(whoAmI(third.token))).toEqual({ status: 401, description: 'invalid_token' });
    // Revoking: by id, and self.
    const spare = await makePat(db, bob, ['api']);
    await new Gitlab({ host, token: spare }).PersonalAccessTokens.remove();
    expect(await refusal(whoAmI(spare))).toEqual({ status: 401, description: 'invalid_token' });
  });

  it('AuditEvents.all and show', async () => {
    const events = await admin.AuditEvents.all({ entityType: 'User', entityId: bob.id });
    const names = events.map((e) => (e.details as unknown as { event_name: string }).event_name);
    expect(names).toEqual(expect.arrayContaining(['user.block', 'user.unblock', 'personal_access_token.rotate']));
    const one = await admin.AuditEvents.show(events[0].id);
    expect([one.id, one.entity_type, one.entity_id]).toEqual([events[0].id, 'User', bob.id]);
  });
});
