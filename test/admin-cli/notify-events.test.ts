// `notify send` and `notify events show` in-process on real PostgreSQL, the messages delivered by
// the real sender to a real SMTP server: the receipt, idempotency by key, the event's recipients with
// their reasons and delivery states in 80 columns, and bad input refused with nothing changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../service/config';
import type { Db, Project } from '../../service/db/schema';
import { drainOnce } from '../../service/mail/sender';
import { createMailTransport } from '../../service/mail/transports';
import { addMember, createGroup, createProject, makeUser } from '../support/api-fixtures';
import { createTestDatabase } from '../support/db';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { ACTOR, expectUserError, runIn } from './support';

const env = { PUBLIC_URL: 'https://id.example.org' };
let db: Db;
let sink: SmtpSink;
let project: Project;
const run = (argv: string[]) => runIn(db, argv, { env });

const BASE: Record<string, string> = {
  project: 'acme/api',
  event: 'new_issue',
  'target-type': 'issue',
  'target-id': '12',
  title: 'Crash on login',
  url: 'https://code.example.org/acme/api/-/issues/12',
  author: 'alice',
};
/** `notify send` with the base options, `over` replacing some, then `extra` words. */
const sendWith = (over: Record<string, string>, ...extra: string[]) => [
  'notify',
  'send',
  ...Object.entries({ ...BASE, ...over }).flatMap(([k, v]) => [`--${k}`, v]),
  ...extra,
];
const send = (...extra: string[]) => sendWith({}, ...extra);

async function deliver() {
  const config = loadConfig({ MAIL_URL: sink.url(), ...env });
  const transport = createMailTransport(config.mail);
  await drainOnce({ db, transport, from: config.mail.from, maxAttempts: 1, concurrency: 2 });
  await transport.close();
}

beforeAll(async () => {
  ({ db } = await createTestDatabase());
  sink = await startSmtpSink();
  for (const name of ['alice', 'bob', 'carol', 'a-rather-long-username-indeed']) await makeUser(db, name);
  await createGroup(db, { path: 'acme', visibility: 'private' });
  project = await createProject(db, { path: 'acme/api', visibility: 'private' });
  for (const name of ['alice', 'bob', 'carol', 'a-rather-long-username-indeed']) {
    await addMember(db, { group: 'acme', username: name, access: 'developer' });
  }
  const bob = await db.selectFrom('users').select('id').where('username', '=', 'bob').executeTakeFirstOrThrow();
  await db
    .insertInto('notification_settings')
    .values({ user_id: bob.id, project_id: project.id, level: 'watch' })
    .execute();
});
afterAll(() => sink.close());

describe('notify send', () => {
  it('--json: the receipt; the same key again is the same event and no second e-mail', async () => {
    const first = await run([...send('--participants', 'alice', 'carol', '--idempotency-key', 'k1'), '--json']);
    expect(first).toMatchObject({ code: 0, err: '' });
    expect(first.json).toEqual({
      id: expect.any(Number),
      event: 'new_issue',
      project_id: project.id,
      group_id: null,
      target_type: 'issue',
      recipient_count: 2,
      idempotency_key: 'k1',
      created_at: expect.any(String),
    });
    const again = await run([...send('--participants', 'alice', 'carol', '--idempotency-key', 'k1'), '--json']);
    expect(again.json).toEqual(first.json);
    const outbox = await db.selectFrom('mail_outbox').select(['to_address', 'kind']).orderBy('to_address').execute();
    expect(outbox).toEqual([
      { to_address: 'bob@example.com', kind: 'notification.new_issue' },
      { to_address: 'carol@example.com', kind: 'notification.new_issue' },
    ]);
    const caller = await db.selectFrom('notification_events').select('caller').executeTakeFirstOrThrow();
    expect(caller.caller).toBe(ACTOR);
  });

  it('human output, then `notify events show`: who, why and each delivery state, in 80 columns', async () => {
    const sent = await run(
      send('--participants', 'carol', '--mentioned', 'a-rather-long-username-indeed', '--idempotency-key', 'k2'),
    );
    expect(sent.code, sent.err).toBe(0);
    const id = Number(/^id:\s+(\d+)$/m.exec(sent.out)?.[1]);
    expect(sent.out).toBe(
      `id:               ${id}\nevent:            new_issue\nrecipients:       3\nidempotency_key:  k2\nnext:             lanyard-admin notify events show ${id}\n`,
    );
    const pending = await run(['notify', 'events', 'show', String(id)]);
    expect(pending.out).toMatch(/^bob +watching +\d+ +pending +0 +bob@example\.com$/m);
    await deliver();

    const shown = await run(['notify', 'events', 'show', String(id)]);
    expect(shown.code, shown.err).toBe(0);
    const lines = shown.out.trimEnd().split('\n');
    expect(lines.every((l) => [...l].length <= 80)).toBe(true);
    const table = lines.slice(lines.findIndex((l) => l.startsWith('USERNAME')));
    expect(table.map((l) => l.split(/ {2,}/))).toEqual([
      ['USERNAME', 'REASON', 'MAIL', 'STATUS', 'TRIES', 'TO'],
      ['a-rather-long-u…', 'mentioned', expect.stringMatching(/^\d+$/), 'sent', '1', 'a-rather-long-username-…'],
      ['bob', 'watching', expect.stringMatching(/^\d+$/), 'sent', '1', 'bob@example.com'],
      ['carol', 'participating', expect.stringMatching(/^\d+$/), 'sent', '1', 'carol@example.com'],
    ]);
    expect(shown.out).toContain('target:           issue 12: Crash on login\n');
    expect(shown.out).toContain('project:          acme/api\n');

    const json = (await run(['notify', 'events', 'show', String(id), '--json'])).json;
    expect(
      json.deliveries.map((d: { username: string; reason: string; status: string }) => [
        d.username,
        d.reason,
        d.status,
      ]),
    ).toEqual([
      ['a-rather-long-username-indeed', 'mentioned', 'sent'],
      ['bob', 'watching', 'sent'],
      ['carol', 'participating', 'sent'],
    ]);
  });

  it('a failed delivery shows as failed', async () => {
    const sent = await run([...send('--idempotency-key', 'k3'), '--json']);
    sink.refuse = { code: 550, message: 'No such user' };
    await deliver();
    sink.refuse = undefined;
    const shown = (await run(['notify', 'events', 'show', String(sent.json.id), '--json'])).json;
    expect(shown.deliveries).toEqual([
      expect.objectContaining({ username: 'bob', reason: 'watching', status: 'failed', attempts: 1 }),
    ]);
  });

  it('refuses bad input and changes nothing', async () => {
    await expectUserError(db, sendWith({ event: 'new_thing' }), /event does not have a valid value/, { env });
    await expectUserError(db, send('--participants', 'nobody'), /user "nobody" not found/, { env });
    await expectUserError(db, sendWith({ project: 'acme/nope' }), /project "acme\/nope" not found/, { env });
    await expectUserError(
      db,
      sendWith({ 'target-type': 'pipeline' }),
      /target\[type\] pipeline does not fit the event new_issue/,
      { env },
    );
    await expectUserError(db, sendWith({ url: 'ftp://x.example' }), /target\[url\] must be an http or https URL/, {
      env,
    });
    await expectUserError(db, sendWith({ 'target-id': 'x' }), /target\[iid\] is invalid/, { env });
    await expectUserError(db, ['notify', 'events', 'show', '999'], /Notification event 999 Not Found/, { env });
    await expectUserError(db, ['notify', 'events', 'show', 'abc'], /event id "abc" is not a number/, { env });
  });
});
