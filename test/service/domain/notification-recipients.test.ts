// The notification recipient rules on real PostgreSQL: every level × candidate kind × event, the
// regression tests for GitLab's bugs (gitlab#19102, #367418, #222840), effective settings, and
// the refusal of bad input.
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, NotificationLevel, Project, User } from '../../../service/db/schema';
import { NOTIFICATION_EVENTS } from '../../../service/db/schema';
import { effectiveSettings } from '../../../service/domain/notifications/effective';
import {
  parseRecipientsRequest,
  type RecipientTarget,
  resolveRecipients,
} from '../../../service/domain/notifications/recipients';
import { addMember, createGroup, createProject, makeUser } from '../../support/api-fixtures';
import { createTestDatabase } from '../../support/db';

let db: Db;
let n = 0;

const projectTarget = (p: Project): RecipientTarget => ({ kind: 'project', project: p });

async function setting(
  user: User,
  where: { group?: Group; project?: Project },
  level: NotificationLevel,
  extra: Record<string, unknown> = {},
) {
  await db
    .insertInto('notification_settings')
    .values({
      user_id: user.id,
      group_id: where.group?.id ?? null,
      project_id: where.project?.id ?? null,
      level,
      ...extra,
    })
    .execute();
}

beforeAll(async () => {
  db = (await createTestDatabase()).db;
});

describe('level × kind × event (the issue text, as a table)', () => {
  // Written from the issue, not from the code: which candidate kinds each level lets through, and
  // the events that change the answer.
  const watchExcluded = ['push_to_merge_request', 'issue_due', 'success_pipeline'];
  const participatingExtra = ['failed_pipeline', 'fixed_pipeline', 'moved_project'];
  type Kind = 'mention' | 'participating' | 'watch';
  const cases: {
    name: string;
    level: NotificationLevel;
    flags?: string[] | 'all';
    allows: (k: Kind, e: string) => boolean;
  }[] = [
    { name: 'disabled', level: 'disabled', allows: () => false },
    { name: 'mention', level: 'mention', allows: (k) => k === 'mention' },
    {
      name: 'participating',
      level: 'participating',
      allows: (k, e) => k !== 'watch' || participatingExtra.includes(e),
    },
    { name: 'watch', level: 'watch', allows: (k, e) => k !== 'watch' || !watchExcluded.includes(e) },
    { name: 'custom, every flag on', level: 'custom', flags: 'all', allows: () => true },
    { name: 'custom, every flag off', level: 'custom', flags: [], allows: (k) => k !== 'watch' },
    {
      name: 'custom, success_pipeline only',
      level: 'custom',
      flags: ['success_pipeline'],
      // success_pipeline on also fires fixed_pipeline.
      allows: (k, e) => k !== 'watch' || e === 'success_pipeline' || e === 'fixed_pipeline',
    },
  ];
  const kinds: Kind[] = ['mention', 'participating', 'watch'];
  const reasonOf = (k: Kind, level: NotificationLevel) =>
    k === 'mention'
      ? 'mentioned'
      : k === 'participating'
        ? 'participating'
        : level === 'custom'
          ? 'custom'
          : 'watching';

  it('every case, for every one of the events', async () => {
    const group = await createGroup(db, { path: 'table', visibility: 'public' });
    const project = await createProject(db, { path: 'table/p', visibility: 'public' });
    const users: { user: User; kind: Kind; c: (typeof cases)[number] }[] = [];
    for (const c of cases) {
      for (const kind of kinds) {
        const user = await makeUser(db, `t${++n}`);
        const flags =
          c.flags === 'all'
            ? Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, true]))
            : Object.fromEntries((c.flags ?? []).map((e) => [e, true]));
        await setting(user, { project }, c.level, flags);
        // A watcher candidate: watching the group, whatever the project's own level says.
        if (kind === 'watch') await setting(user, { group }, 'watch');
        users.push({ user, kind, c });
      }
    }
    let checked = 0;
    for (const event of NOTIFICATION_EVENTS) {
      const got = await resolveRecipients(db, projectTarget(project), {
        event,
        authorId: null,
        participantIds: users.filter((u) => u.kind === 'participating').map((u) => u.user.id),
        mentionedIds: users.filter((u) => u.kind === 'mention').map((u) => u.user.id),
      });
      const expected = users
        .filter((u) => u.c.allows(u.kind, event))
        .map((u) => ({
          user_id: u.user.id,
          username: u.user.username,
          email: u.user.email,
          reason: reasonOf(u.kind, u.c.level),
          level: u.c.level,
          source: { type: 'project', id: project.id, full_path: 'table/p' },
        }));
      expect({ event, got }).toEqual({ event, got: expected });
      checked += users.length;
    }
    expect(checked).toBe(NOTIFICATION_EVENTS.length * cases.length * kinds.length);
  });

  it('one entry per user, the highest-priority reason kept: mentioned > participating > watching', async () => {
    await createGroup(db, { path: 'prio', visibility: 'public' });
    const project = await createProject(db, { path: 'prio/p', visibility: 'public' });
    const both = await makeUser(db, `t${++n}`);
    const partWatch = await makeUser(db, `t${++n}`);
    await setting(both, { project }, 'watch');
    await setting(partWatch, { project }, 'watch');
    const got = await resolveRecipients(db, projectTarget(project), {
      event: 'new_note',
      authorId: null,
      participantIds: [both.id, partWatch.id],
      mentionedIds: [both.id],
    });
    expect(got.map((r) => [r.username, r.reason])).toEqual([
      [both.username, 'mentioned'],
      [partWatch.username, 'participating'],
    ]);
  });

  it('hundreds of recipients come back whole, once each, sorted by id, with their reasons and sources', async () => {
    // 700 watchers at two sources and a named participant: every one once, in id order, exact.
    const group = await createGroup(db, { path: 'crowd', visibility: 'public' });
    const project = await createProject(db, { path: 'crowd/p', visibility: 'public' });
    const first = await makeUser(db, `t${++n}`);
    await db
      .insertInto('users')
      .columns(['username', 'email', 'name'])
      .expression((eb) =>
        eb
          .selectFrom(sql<{ i: number }>`generate_series(1, 700)`.as('g'))
          .select([
            sql<string>`'crowd' || g`.as('username'),
            sql<string>`'crowd' || g || '@example.com'`.as('email'),
            sql<string>`'Crowd ' || g`.as('name'),
          ]),
      )
      .execute();
    const crowd = await db
      .selectFrom('users')
      .select(['id', 'username', 'email'])
      .where('username', 'like', 'crowd%')
      .orderBy('id')
      .execute();
    // Alternate group and project watchers, so both sources appear all through the list.
    for (const [i, u] of crowd.entries())
      await db
        .insertInto('notification_settings')
        .values({
          user_id: u.id,
          level: 'watch',
          group_id: i % 2 ? group.id : null,
          project_id: i % 2 ? null : project.id,
        })
        .execute();
    const got = await resolveRecipients(db, projectTarget(project), {
      event: 'new_issue',
      authorId: null,
      participantIds: [first.id],
      mentionedIds: [crowd[350]!.id],
    });
    expect(got).toHaveLength(701);
    expect(got[0]).toEqual({
      user_id: first.id,
      username: first.username,
      email: first.email,
      reason: 'participating',
      level: 'participating',
      source: { type: 'global', id: null, full_path: null },
    });
    expect(got.slice(1)).toEqual(
      crowd.map((u, i) => ({
        user_id: u.id,
        username: u.username,
        email: u.email,
        reason: i === 350 ? 'mentioned' : 'watching',
        level: 'watch',
        source:
          i % 2
            ? { type: 'group', id: group.id, full_path: 'crowd' }
            : { type: 'project', id: project.id, full_path: 'crowd/p' },
      })),
    );
  });

  it('excludes the author (own activity), blocked users and users who cannot see a private project', async () => {
    const group = await createGroup(db, { path: 'priv', visibility: 'private' });
    const project = await createProject(db, { path: 'priv/p', visibility: 'private' });
    const author = await makeUser(db, `t${++n}`);
    const outsider = await makeUser(db, `t${++n}`);
    const member = await makeUser(db, `t${++n}`);
    const admin = await makeUser(db, `t${++n}`, { admin: true });
    const blocked = await makeUser(db, `t${++n}`);
    for (const u of [author, member, blocked])
      await addMember(db, { group: 'priv', username: u.username, access: 'developer' });
    for (const u of [author, outsider, member, admin, blocked]) await setting(u, { group }, 'watch');
    await db.updateTable('users').set({ state: 'blocked' }).where('id', '=', blocked.id).execute();
    const got = await resolveRecipients(db, projectTarget(project), {
      event: 'new_issue',
      authorId: author.id,
      participantIds: [author.id, outsider.id],
      mentionedIds: [],
    });
    expect(got.map((r) => r.username)).toEqual([member.username, admin.username]);
  });
});

describe('regressions of GitLab bugs', () => {
  it('gitlab#19102: a watch or custom setting on a grandparent group makes a candidate (also #543090, #362630)', async () => {
    const top = await createGroup(db, { path: 'r19102', visibility: 'public' });
    await createGroup(db, { path: 'mid', parent: 'r19102', visibility: 'public' });
    await createGroup(db, { path: 'low', parent: 'r19102/mid', visibility: 'public' });
    const project = await createProject(db, { path: 'r19102/mid/low/p', visibility: 'public' });
    const watcher = await makeUser(db, `t${++n}`);
    const custom = await makeUser(db, `t${++n}`);
    const globalWatcher = await makeUser(db, `t${++n}`);
    await setting(watcher, { group: top }, 'watch');
    await setting(custom, { group: top }, 'custom', { new_issue: true });
    // A member of the top group whose global level is watch (GitLab: a `global` row at the group).
    await addMember(db, { group: 'r19102', username: globalWatcher.username, access: 'reporter' });
    await setting(globalWatcher, {}, 'watch');
    const got = await resolveRecipients(db, projectTarget(project), {
      event: 'new_issue',
      authorId: null,
      participantIds: [],
      mentionedIds: [],
    });
    const top_ = { type: 'group', id: top.id, full_path: 'r19102' };
    expect(got).toEqual([
      {
        user_id: watcher.id,
        username: watcher.username,
        email: watcher.email,
        reason: 'watching',
        level: 'watch',
        source: top_,
      },
      {
        user_id: custom.id,
        username: custom.username,
        email: custom.email,
        reason: 'custom',
        level: 'custom',
        source: top_,
      },
      {
        user_id: globalWatcher.id,
        username: globalWatcher.username,
        email: globalWatcher.email,
        reason: 'watching',
        level: 'watch',
        source: { type: 'global', id: null, full_path: null },
      },
    ]);
    // The custom holder's flag is off for new_note: only the watchers get it.
    const notes = await resolveRecipients(db, projectTarget(project), {
      event: 'new_note',
      authorId: null,
      participantIds: [],
      mentionedIds: [],
    });
    expect(notes.map((r) => r.username)).toEqual([watcher.username, globalWatcher.username]);
  });

  it("gitlab#367418: a group's notification e-mail is inherited by its subgroups and projects; the nearest wins", async () => {
    const top = await createGroup(db, { path: 'r367418', visibility: 'public' });
    const sub = await createGroup(db, { path: 'sub', parent: 'r367418', visibility: 'public' });
    await createGroup(db, { path: 'deeper', parent: 'r367418/sub', visibility: 'public' });
    const inTop = await createProject(db, { path: 'r367418/p', visibility: 'public' });
    const deep = await createProject(db, { path: 'r367418/sub/deeper/p', visibility: 'public' });
    const user = await makeUser(db, `t${++n}`);
    const plain = await makeUser(db, `t${++n}`);
    await setting(user, {}, 'participating', { notification_email: 'global@example.org' });
    await setting(user, { group: top }, 'global', { notification_email: 'top@example.org' });
    const request = {
      event: 'new_note' as const,
      authorId: null,
      participantIds: [user.id, plain.id],
      mentionedIds: [],
    };
    const emails = async (p: Project) =>
      (await resolveRecipients(db, projectTarget(p), request)).map((r) => [r.username, r.email]);
    expect(await emails(deep)).toEqual([
      [user.username, 'top@example.org'],
      [plain.username, plain.email],
    ]);
    await setting(user, { group: sub }, 'global', { notification_email: 'sub@example.org' });
    expect(await emails(deep)).toEqual([
      [user.username, 'sub@example.org'],
      [plain.username, plain.email],
    ]);
    expect(await emails(inTop)).toEqual([
      [user.username, 'top@example.org'],
      [plain.username, plain.email],
    ]);
    expect((await effectiveSettings(db, user, projectTarget(deep))).notification_email).toBe('sub@example.org');
  });

  it('gitlab#222840: a project left at "global" under a "disabled" ancestor is disabled, and says where from', async () => {
    const top = await createGroup(db, { path: 'r222840', visibility: 'public' });
    const mid = await createGroup(db, { path: 'mid', parent: 'r222840', visibility: 'public' });
    const project = await createProject(db, { path: 'r222840/mid/p', visibility: 'public' });
    const user = await makeUser(db, `t${++n}`);
    await setting(user, {}, 'watch');
    await setting(user, { group: top }, 'disabled');
    await setting(user, { group: mid }, 'global');
    await setting(user, { project }, 'global');
    const eff = await effectiveSettings(db, user, projectTarget(project));
    expect({ level: eff.level, source: eff.source, notification_email: eff.notification_email }).toEqual({
      level: 'disabled',
      source: { type: 'group', id: top.id, full_path: 'r222840' },
      notification_email: user.email,
    });
    const got = await resolveRecipients(db, projectTarget(project), {
      event: 'new_note',
      authorId: null,
      participantIds: [user.id],
      mentionedIds: [user.id],
    });
    expect(got).toEqual([]);
  });
});

describe('effective settings', () => {
  it('defaults to participating from the global level, every flag off', async () => {
    await createGroup(db, { path: 'eff', visibility: 'public' });
    const project = await createProject(db, { path: 'eff/p', visibility: 'public' });
    const user = await makeUser(db, `t${++n}`);
    const eff = await effectiveSettings(db, user, projectTarget(project));
    expect({ ...eff, chain: undefined }).toEqual({
      level: 'participating',
      source: { type: 'global', id: null, full_path: null },
      notification_email: user.email,
      events: Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, false])),
      chain: undefined,
    });
  });

  it("a project's custom setting gives its flags", async () => {
    await createGroup(db, { path: 'eff2', visibility: 'public' });
    const project = await createProject(db, { path: 'eff2/p', visibility: 'public' });
    const user = await makeUser(db, `t${++n}`);
    await setting(user, { project }, 'custom', { new_note: true });
    const eff = await effectiveSettings(db, user, projectTarget(project));
    expect(eff.level).toBe('custom');
    expect(eff.source).toEqual({ type: 'project', id: project.id, full_path: 'eff2/p' });
    expect(eff.events).toEqual(Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, e === 'new_note'])));
  });
});

describe('bad input', () => {
  it('refuses unknown events, bad and duplicate ids and more than 10,000 ids', () => {
    expect(() => parseRecipientsRequest({})).toThrow('event is missing');
    expect(() => parseRecipientsRequest({ event: 'new_thing' })).toThrow('event does not have a valid value');
    expect(() => parseRecipientsRequest({ event: 'new_note', participant_ids: ['x'] })).toThrow(
      'participant_ids is invalid',
    );
    expect(() => parseRecipientsRequest({ event: 'new_note', mentioned_ids: [3, '3'] })).toThrow(
      'mentioned_ids contains 3 more than once',
    );
    const many = Array.from({ length: 10_001 }, (_, i) => i + 1);
    expect(() => parseRecipientsRequest({ event: 'new_note', participant_ids: many })).toThrow(
      'participant_ids must have at most 10000 ids',
    );
    expect(parseRecipientsRequest({ event: 'new_note', 'participant_ids[]': '7', author_id: '2' })).toEqual({
      event: 'new_note',
      authorId: 2,
      participantIds: [7],
      mentionedIds: [],
    });
  });

  it('refuses unknown and blocked users', async () => {
    await createGroup(db, { path: 'bad', visibility: 'public' });
    const project = await createProject(db, { path: 'bad/p', visibility: 'public' });
    const blocked = await makeUser(db, `t${++n}`, { blocked: true });
    const base = { event: 'new_note' as const, authorId: null, participantIds: [], mentionedIds: [] };
    await expect(resolveRecipients(db, projectTarget(project), { ...base, participantIds: [999999] })).rejects.toThrow(
      'participant_ids contains an unknown user: 999999',
    );
    await expect(
      resolveRecipients(db, projectTarget(project), { ...base, mentionedIds: [blocked.id] }),
    ).rejects.toThrow(`mentioned_ids contains a blocked user: ${blocked.id}`);
    await expect(resolveRecipients(db, projectTarget(project), { ...base, authorId: 999998 })).rejects.toThrow(
      'author_id is an unknown user: 999998',
    );
  });
});
