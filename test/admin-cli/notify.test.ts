// `notify recipients` and `notify explain` in-process against real PostgreSQL: the JSON document,
// the human output, every step of an explanation, and bad input refused with nothing changed.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, Project, User } from '../../service/db/schema';
import { addMember, createGroup, createProject, makeUser } from '../support/api-fixtures';
import { createTestDatabase } from '../support/db';
import { expectUserError, runIn } from './support';

let db: Db;
let top: Group;
let project: Project;
let alice: User;
let bob: User;
let carol: User;
const run = (argv: string[]) => runIn(db, argv);

beforeAll(async () => {
  ({ db } = await createTestDatabase());
  alice = await makeUser(db, 'alice');
  bob = await makeUser(db, 'bob');
  carol = await makeUser(db, 'carol');
  await makeUser(db, 'mallory', { blocked: true });
  top = await createGroup(db, { path: 'acme', visibility: 'private' });
  await createGroup(db, { path: 'team', parent: 'acme', visibility: 'private' });
  project = await createProject(db, { path: 'acme/team/api', visibility: 'private' });
  for (const u of ['alice', 'bob']) await addMember(db, { group: 'acme', username: u, access: 'developer' });
  await db.insertInto('notification_settings').values({ user_id: bob.id, group_id: top.id, level: 'watch' }).execute();
});

describe('notify recipients', () => {
  it('--json: the recipients document, as the API answers', async () => {
    const r = await run([
      'notify',
      'recipients',
      '--project',
      'acme/team/api',
      '--event',
      'new_note',
      '--author',
      'alice',
      '--participant',
      'alice',
      '--participant',
      'carol',
      '--mentioned',
      'bob',
      '--json',
    ]);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.json).toEqual({
      recipients: [
        {
          user_id: bob.id,
          username: 'bob',
          email: 'bob@example.com',
          reason: 'mentioned',
          level: 'watch',
          source: { type: 'group', id: top.id, full_path: 'acme' },
        },
      ],
    });
  });

  it('human output: an aligned table', async () => {
    const r = await run(['notify', 'recipients', '--project', 'acme/team/api', '--event', 'new_issue']);
    expect(r.code).toBe(0);
    expect(
      r.out
        .trimEnd()
        .split('\n')
        .map((l) => l.split(/ {2,}/)),
    ).toEqual([
      ['USERNAME', 'EMAIL', 'REASON', 'LEVEL', 'FROM'],
      ['bob', 'bob@example.com', 'watching', 'watch', 'group acme'],
    ]);
    const none = await run(['notify', 'recipients', '--project', 'acme/team/api', '--event', 'success_pipeline']);
    expect(none.out).toBe('(nobody is notified)\n');
  });

  it('refuses an unknown event, user or project, a blocked or repeated user, and changes nothing', async () => {
    const base = ['notify', 'recipients', '--project', 'acme/team/api'];
    await expectUserError(db, [...base, '--event', 'new_thing'], /event does not have a valid value/);
    await expectUserError(db, [...base, '--event', 'new_note', '--participant', 'nobody'], /user "nobody" not found/);
    await expectUserError(
      db,
      ['notify', 'recipients', '--project', 'acme/nope', '--event', 'new_note'],
      /project "acme\/nope" not found/,
    );
    await expectUserError(
      db,
      [...base, '--event', 'new_note', '--mentioned', 'mallory'],
      /mentioned_ids contains a blocked user/,
    );
    await expectUserError(
      db,
      [...base, '--event', 'new_note', '--participant', 'bob', '--participant', 'bob'],
      new RegExp(`participant_ids contains ${bob.id} more than once`),
    );
  });
});

describe('notify explain', () => {
  it('prints each step of the decision, ending with the engine answer', async () => {
    const r = await run([
      'notify',
      'explain',
      '--user',
      'bob',
      '--project',
      'acme/team/api',
      '--event',
      'new_issue',
      '--json',
    ]);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.json.steps).toEqual([
      { step: 'event', detail: 'new_issue on project acme/team/api (private)' },
      { step: 'state', detail: 'active' },
      { step: 'access', detail: 'private; member of it or of an ancestor group' },
      { step: 'own activity', detail: 'not the author' },
      { step: 'setting', detail: 'group acme: watch' },
      { step: 'effective level', detail: 'watch (from group acme)' },
      { step: 'candidate', detail: 'watcher/custom holder at group acme' },
      { step: 'level rule', detail: 'watch lets a watch candidate through for new_issue' },
      { step: 'result', detail: 'notified (watching) at bob@example.com' },
    ]);
    expect(r.json.recipient.reason).toBe('watching');
  });

  it('says why a user is not notified (text output)', async () => {
    const r = await run(['notify', 'explain', '--user', 'carol', '--project', 'acme/team/api', '--event', 'new_note']);
    expect(r.code).toBe(0);
    expect(r.out).toBe(
      [
        '1. event:            new_note on project acme/team/api (private)',
        '2. state:            active',
        '3. access:           private and not a member: never notified',
        '4. own activity:     not the author',
        '5. effective level:  participating (from global)',
        '6. candidate:        neither participant, mentioned, watcher nor custom holder: not a candidate',
        '7. result:           not notified',
        '',
      ].join('\n'),
    );
    expect(carol.id).toBeGreaterThan(0);
    expect(project.id).toBeGreaterThan(0);
    expect(alice.id).toBeGreaterThan(0);
  });
});
