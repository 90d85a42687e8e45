// The notification intake end to end (issue 25): POST …/notification_events through the real app on
// real PostgreSQL, the real sender draining the outbox through the SMTP transport into a real SMTP
// server, every message parsed with mailparser. The people e-mailed are exactly the engine's
// recipients (GitLab's bug cases included), with GitLab's headers and threading; retries with the
// same idempotency key (one after the other, and racing) e-mail nobody twice; bad input writes nothing.
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { type ParsedMail, simpleParser } from 'mailparser';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../service/config';
import { registerApplication } from '../../service/domain/applications';
import type { Db, Group, Project, User } from '../../service/db/schema';
import { resolveRecipients } from '../../service/domain/notifications/recipients';
import { recordSuppression } from '../../service/domain/mail/suppressions';
import { addUserEmail } from '../../service/domain/users';
import { drainOnce } from '../../service/mail/sender';
import { createMailTransport } from '../../service/mail/transports';
import { addMember, createGroup, createProject, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp, testConfig } from '../support/app';
import { createTestDatabase } from '../support/db';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink';

const PUBLIC_URL = 'https://id.example.org';
const FROM = 'Lanyard <noreply@id.example.org>';

let db: Db;
let app: FastifyInstance;
let sink: SmtpSink;
let adminToken: string;
let notifyToken: string;
const users: Record<string, User> = {};
let top: Group;
let team: Group;
let project: Project;

/** An application's own token from the real client credentials grant (POST /oauth/token). */
async function applicationToken(scopes: string[]): Promise<string> {
  const { application, secret } = await registerApplication(db, {
    name: `Service ${scopes.join(' ')}`,
    redirectUris: ['https://service.example.org/callback'],
    scopes: scopes.join(' '),
  });
  const res = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: {
      authorization: `Basic ${Buffer.from(`${application.uid}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: `grant_type=client_credentials&scope=${encodeURIComponent(scopes.join(' '))}`,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().access_token;
}

function post(token: string, path: string, body: unknown) {
  return app.inject({
    method: 'POST',
    url: `/api/v4${path}/notification_events`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

/** Drain the outbox into the SMTP server and parse what arrived, by recipient address. */
async function deliver(): Promise<Map<string, ParsedMail>> {
  sink.received.length = 0;
  const config = loadConfig({ MAIL_URL: sink.url(), PUBLIC_URL, MAIL_FROM: FROM });
  const transport = createMailTransport(config.mail);
  for (;;) {
    const round = await drainOnce({ db, transport, from: FROM, maxAttempts: 1, concurrency: 4 });
    if (!round.claimed) break;
  }
  await transport.close();
  const parsed = await Promise.all(sink.received.map((m) => simpleParser(m.raw)));
  return new Map(parsed.map((m, i) => [sink.received[i].to.join(','), m]));
}

const header = (m: ParsedMail, name: string) => {
  const line = m.headerLines.find((h) => h.key === name.toLowerCase());
  return line ? line.line.slice(line.line.indexOf(':') + 1).trim() : undefined;
};

async function counts() {
  const one = async (table: 'notification_events' | 'notification_event_recipients' | 'mail_outbox') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    events: await one('notification_events'),
    links: await one('notification_event_recipients'),
    mail: await one('mail_outbox'),
  };
}

let keys = 0;
const issue = (iid: number, extra: Record<string, unknown> = {}) => ({
  target: {
    type: 'issue',
    iid,
    title: 'Crash on login',
    url: `https://code.example.org/acme/team/api/-/issues/${iid}`,
  },
  idempotency_key: `key-${++keys}`,
  ...extra,
});

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db, { publicUrl: PUBLIC_URL, mail: { ...testConfig().mail, from: FROM } });
  sink = await startSmtpSink();
  const root = await makeUser(db, 'root', { admin: true });
  adminToken = await makePat(db, root, ['api']);
  notifyToken = await applicationToken(['notify']);
  for (const name of ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'gina']) users[name] = await makeUser(db, name);
  top = await createGroup(db, { path: 'acme', visibility: 'private' });
  team = await createGroup(db, { path: 'team', parent: 'acme', visibility: 'private' });
  project = await createProject(db, { path: 'acme/team/api', visibility: 'private' });
  for (const name of ['alice', 'bob', 'carol', 'erin', 'frank', 'gina']) {
    await addMember(db, { group: 'acme', username: name, access: 'developer' });
  }
  const setting = (user: string, where: { group_id?: number; project_id?: number }, level: string, extra = {}) =>
    db
      .insertInto('notification_settings')
      .values({ user_id: users[user].id, ...where, level, ...extra } as never)
      .execute();
  // bob watches the TOP group, two levels above the project (gitlab#19102: GitLab misses him), and
  // routes that group's mail to a verified secondary address (gitlab#367418: GitLab ignores it below).
  await addUserEmail(db, 'bob', 'bob@work.example.com');
  await setting('bob', { group_id: top.id }, 'watch', { notification_email: 'bob@work.example.com' });
  // erin: custom at the subgroup, only new_note.
  await setting('erin', { group_id: team.id }, 'custom', { new_note: true });
  // frank: disabled on the project (not even a mention reaches him).
  await setting('frank', { project_id: project.id }, 'disabled');
  // gina: global level mention.
  await setting('gina', {}, 'mention');
});
afterAll(() => sink.close());
beforeEach(() => {
  sink.received.length = 0;
});

describe('POST /projects/:id/notification_events: the right people e-mailed', () => {
  const cases: Array<{
    name: string;
    body: Record<string, unknown>;
    expected: Record<string, string>;
  }> = [
    {
      name: 'new_issue: a watcher of an ancestor two levels up, at his group address; participants; not the author',
      body: { event: 'new_issue', participant_ids: ['alice', 'carol'], mentioned_ids: ['dave', 'gina'] },
      // dave is no member of the private project; frank is not involved; erin's custom lacks new_issue.
      expected: {
        'bob@work.example.com': 'watching',
        'carol@example.com': 'participating',
        'gina@example.com': 'mentioned',
      },
    },
    {
      name: 'new_note: custom at the subgroup counts; a disabled member is not e-mailed even when mentioned',
      body: { event: 'new_note', participant_ids: ['alice'], mentioned_ids: ['frank', 'carol'] },
      expected: {
        'bob@work.example.com': 'watching',
        'carol@example.com': 'mentioned',
        'erin@example.com': 'custom',
      },
    },
    {
      name: 'close_issue: a global `mention` member taking part is not e-mailed',
      body: { event: 'close_issue', participant_ids: ['gina', 'carol'] },
      expected: { 'bob@work.example.com': 'watching', 'carol@example.com': 'participating' },
    },
  ];

  it.each(cases)('$name', async ({ body, expected }) => {
    const ids = (names: unknown) => (names as string[] | undefined)?.map((n) => users[n].id) ?? [];
    const payload = {
      ...issue(12),
      ...body,
      author_id: users.alice.id,
      participant_ids: ids(body.participant_ids),
      mentioned_ids: ids(body.mentioned_ids),
    };
    const res = await post(notifyToken, `/projects/${encodeURIComponent('acme/team/api')}`, payload);
    expect(res.statusCode, res.body).toBe(202);
    const receipt = res.json();
    expect(receipt).toEqual({
      id: expect.any(Number),
      event: body.event,
      project_id: project.id,
      group_id: null,
      target_type: 'issue',
      recipient_count: Object.keys(expected).length,
      idempotency_key: payload.idempotency_key,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });

    // The engine's answer, asked directly, is the same set of people.
    const engine = await resolveRecipients(
      db,
      { kind: 'project', project },
      {
        event: body.event as never,
        authorId: users.alice.id,
        participantIds: payload.participant_ids,
        mentionedIds: payload.mentioned_ids,
      },
    );
    expect(Object.fromEntries(engine.map((r) => [r.email, r.reason]))).toEqual(expected);

    const received = await deliver();
    expect(sink.received).toHaveLength(Object.keys(expected).length);
    expect(Object.fromEntries([...received].map(([to, m]) => [to, header(m, 'X-GitLab-NotificationReason')]))).toEqual(
      expected,
    );
    for (const [to, m] of received) {
      const user = engine.find((r) => r.email === to)!;
      const opens = body.event === 'new_issue';
      expect(m.subject).toBe(`${opens ? '' : 'Re: '}api | Crash on login (#12)`);
      expect(m.from?.value).toEqual([{ name: 'Lanyard', address: 'noreply@id.example.org' }]);
      expect(header(m, 'X-GitLab-Project')).toBe('api');
      expect(header(m, 'X-GitLab-Project-Id')).toBe(String(project.id));
      expect(header(m, 'X-GitLab-Project-Path')).toBe('acme/team/api');
      expect(header(m, 'List-Id')).toBe(`acme/team/api <${project.id}.api.team.acme.id.example.org>`);
      expect(m.messageId).toBe(`<notification-${receipt.id}-${user.user_id}@id.example.org>`);
      expect(m.inReplyTo).toBe(`<project-${project.id}-issue-12@id.example.org>`);
      expect(m.references).toBe(`<project-${project.id}-issue-12@id.example.org>`);
      expect(m.text).toContain('https://code.example.org/acme/team/api/-/issues/12');
      expect(m.text).toContain('Manage your notification settings:\nhttps://id.example.org/-/profile/notifications');
      expect(m.html).toContain('href="https://id.example.org/-/profile/notifications"');
    }
    const footer = (to: string) => received.get(to)!.text!;
    if (expected['carol@example.com'] === 'participating') {
      expect(footer('carol@example.com')).toContain(
        "You're receiving this email because you are participating in this issue on id.example.org.",
      );
    }
    expect(footer('bob@work.example.com')).toContain(
      "You're receiving this email because you are watching project acme/team/api on id.example.org.",
    );
  });

  it('threads a second event on the same issue under the first; another issue is another thread', async () => {
    const first = await post(notifyToken, `/projects/${project.id}`, {
      ...issue(40),
      event: 'new_issue',
      author_id: users.alice.id,
    });
    expect(first.statusCode).toBe(202);
    const opened = (await deliver()).get('bob@work.example.com')!;
    const second = await post(notifyToken, `/projects/${project.id}`, {
      ...issue(40),
      event: 'reopen_issue',
      author_id: users.carol.id,
      summary: 'Still broken on Firefox.\n\nSteps: sign in twice.',
    });
    expect(second.statusCode).toBe(202);
    const reopened = (await deliver()).get('bob@work.example.com')!;
    const other = await post(notifyToken, `/projects/${project.id}`, { ...issue(41), event: 'close_issue' });
    expect(other.statusCode).toBe(202);
    const closed = (await deliver()).get('bob@work.example.com')!;

    expect(opened.subject).toBe('api | Crash on login (#40)');
    expect(reopened.subject).toBe('Re: api | Crash on login (#40)');
    expect(reopened.inReplyTo).toBe(opened.inReplyTo);
    expect(reopened.references).toBe(opened.references);
    expect(reopened.messageId).not.toBe(opened.messageId);
    expect(reopened.text).toContain('carol reopened issue #40.\n\nStill broken on Firefox.\n\nSteps: sign in twice.');
    expect(closed.inReplyTo).toBe(`<project-${project.id}-issue-41@id.example.org>`);
  });

  it('merge requests, pipelines, releases and project moves read and thread as GitLab names them', async () => {
    const cases = [
      [
        { event: 'merge_merge_request', target: { type: 'merge_request', iid: 3, title: 'Fix login' } },
        'Re: api | Fix login (!3)',
        `<project-${project.id}-merge-request-3@id.example.org>`,
      ],
      [
        { event: 'failed_pipeline', target: { type: 'pipeline', id: 77, title: 'main' } },
        'Re: api | Failed pipeline #77: main',
        `<project-${project.id}-pipeline-77@id.example.org>`,
      ],
      [
        { event: 'new_release', target: { type: 'release', id: 5, title: 'v1.0' } },
        'api | New release: v1.0',
        `<project-${project.id}-release-5@id.example.org>`,
      ],
      [
        { event: 'moved_project', target: { type: 'project', id: project.id, title: 'api' } },
        'api | Project was moved',
        `<project-${project.id}@id.example.org>`,
      ],
    ] as const;
    for (const [body, subject, thread] of cases) {
      const res = await post(adminToken, `/projects/${project.id}`, {
        ...body,
        target: { ...body.target, url: 'https://code.example.org/x' },
        idempotency_key: `kind-${body.event}`,
      });
      expect(res.statusCode, res.body).toBe(202);
      const bob = (await deliver()).get('bob@work.example.com')!;
      expect([bob.subject, bob.inReplyTo]).toEqual([subject, thread]);
    }
  });
});

describe('group events', () => {
  it('an issue event on a group e-mails the group watchers, with group headers', async () => {
    const res = await post(notifyToken, '/groups/acme', {
      event: 'new_issue',
      target: { type: 'issue', iid: 2, title: 'Roadmap', url: 'https://code.example.org/groups/acme/-/issues/2' },
      author_id: users.alice.id,
      idempotency_key: 'group-1',
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ project_id: null, group_id: top.id, recipient_count: 1 });
    const bob = (await deliver()).get('bob@work.example.com')!;
    expect(bob.subject).toBe('acme | Roadmap (#2)');
    expect(header(bob, 'X-GitLab-Group-Id')).toBe(String(top.id));
    expect(header(bob, 'List-Id')).toBe(`acme <${top.id}.acme.id.example.org>`);
    expect(bob.inReplyTo).toBe(`<group-${top.id}-issue-2@id.example.org>`);
  });

  it('refuses an event that does not exist on groups', async () => {
    const before = await counts();
    const res = await post(notifyToken, '/groups/acme', {
      event: 'new_merge_request',
      target: { type: 'merge_request', iid: 2, title: 'x', url: 'https://code.example.org/x' },
      idempotency_key: 'group-2',
    });
    expect([res.statusCode, res.json()]).toEqual([400, { error: 'event new_merge_request does not exist on groups' }]);
    expect(await counts()).toEqual(before);
  });
});

describe('idempotency', () => {
  it('the same key again answers the same and e-mails nobody twice', async () => {
    const body = { ...issue(50), event: 'new_issue', author_id: users.alice.id, participant_ids: [users.carol.id] };
    const first = await post(notifyToken, `/projects/${project.id}`, body);
    expect(first.statusCode).toBe(202);
    expect((await deliver()).size).toBe(2);
    const again = await post(notifyToken, `/projects/${project.id}`, body);
    expect([again.statusCode, again.json()]).toEqual([202, first.json()]);
    expect((await deliver()).size).toBe(0);
    // Keys are per caller: an administrator using the same key is another event.
    const admin = await post(adminToken, `/projects/${project.id}`, body);
    expect(admin.json().id).not.toBe(first.json().id);
    await deliver();
  });

  it('the same key with a different event is refused, nothing written', async () => {
    const body = { ...issue(51), event: 'new_issue' };
    expect((await post(notifyToken, `/projects/${project.id}`, body)).statusCode).toBe(202);
    const before = await counts();
    const res = await post(notifyToken, `/projects/${project.id}`, { ...body, event: 'close_issue' });
    expect([res.statusCode, res.json()]).toEqual([
      409,
      { message: 'idempotency_key was already used for a different event' },
    ]);
    expect(await counts()).toEqual(before);
    await deliver();
  });

  it('retries racing the first request make one event and one e-mail per recipient', async () => {
    const body = { ...issue(52), event: 'new_issue', author_id: users.alice.id, participant_ids: [users.carol.id] };
    // Hold the first intake inside its transaction: a lock on carol's row makes the engine wait.
    const held = await db.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      await sql`select 1 from users where id = ${users.carol.id} for update`.execute(conn);
      let settled = 0;
      const racing = Array.from({ length: 5 }, () =>
        post(notifyToken, `/projects/${project.id}`, body).then((r) => {
          settled++;
          return r;
        }),
      );
      // Wait until all five are in flight: the first inside its transaction (its recipient links wait
      // for carol's row), the other four waiting on its idempotency key.
      let waiting = 0;
      for (let i = 0; i < 200 && waiting < 5; i++) {
        await new Promise((r) => setTimeout(r, 50));
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity
           where wait_event_type = 'Lock' and datname = current_database()`.execute(db);
        waiting = rows[0].n;
      }
      expect(waiting).toBe(5);
      expect(settled).toBe(0);
      await sql`commit`.execute(conn);
      return Promise.all(racing);
    });
    const answers = held.map((r) => [r.statusCode, r.json()]);
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0][0]).toBe(202);
    const { n } = await db
      .selectFrom('notification_events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('idempotency_key', '=', body.idempotency_key)
      .executeTakeFirstOrThrow();
    expect(Number(n)).toBe(1);
    const received = await deliver();
    expect([...received.keys()].sort()).toEqual(['bob@work.example.com', 'carol@example.com']);
    expect(sink.received).toHaveLength(2);
  });
});

describe('bad input and refusals', () => {
  const base = () => ({ ...issue(60), event: 'new_issue', author_id: users.alice.id });
  const bad: Array<[string, (b: Record<string, unknown>) => unknown, number, unknown]> = [
    ['unknown event', (b) => ({ ...b, event: 'new_thing' }), 400, { error: 'event is invalid' }],
    ['missing event', ({ event: _, ...b }) => b, 400, { error: 'event is missing' }],
    [
      'target type that does not fit',
      (b) => ({ ...b, target: { type: 'pipeline', id: 3, title: 'x', url: 'https://x.example' } }),
      400,
      { error: 'target[type] pipeline does not fit the event new_issue (expected issue)' },
    ],
    ['missing target', ({ target: _, ...b }) => b, 400, { error: 'target is missing' }],
    [
      'missing iid',
      (b) => ({ ...b, target: { type: 'issue', title: 'x', url: 'https://x.example' } }),
      400,
      { error: 'target[iid] is missing' },
    ],
    [
      'a title on two lines',
      (b) => ({ ...b, target: { type: 'issue', iid: 1, title: 'a\r\nBcc: x@evil.example', url: 'https://x.example' } }),
      400,
      { error: 'target[title] is invalid' },
    ],
    [
      'a javascript: url',
      (b) => ({ ...b, target: { type: 'issue', iid: 1, title: 'x', url: 'javascript:alert(1)' } }),
      400,
      { error: 'target[url] must be an http or https URL' },
    ],
    ['missing idempotency key', ({ idempotency_key: _, ...b }) => b, 400, { error: 'idempotency_key is missing' }],
    [
      'unknown user',
      (b) => ({ ...b, participant_ids: [999999] }),
      400,
      { error: 'participant_ids contains an unknown user: 999999' },
    ],
    [
      'duplicate user',
      (b) => ({ ...b, mentioned_ids: [7, 7] }),
      400,
      { error: 'mentioned_ids contains 7 more than once' },
    ],
    [
      'more than 10,000 ids',
      (b) => ({ ...b, participant_ids: Array.from({ length: 10_001 }, (_, i) => i + 1) }),
      400,
      { error: 'participant_ids must have at most 10000 ids' },
    ],
  ];

  it.each(bad)('%s: refused, nothing written', async (_name, change, status, body) => {
    const before = await counts();
    const res = await post(notifyToken, `/projects/${project.id}`, change(base()));
    expect([res.statusCode, res.json()]).toEqual([status, body]);
    expect(await counts()).toEqual(before);
  });

  it('a blocked user named as author is refused, nothing written', async () => {
    const blocked = await makeUser(db, 'blocky', { blocked: true });
    const before = await counts();
    const res = await post(notifyToken, `/projects/${project.id}`, { ...base(), author_id: blocked.id });
    expect([res.statusCode, res.json()]).toEqual([400, { error: `author_id is a blocked user: ${blocked.id}` }]);
    expect(await counts()).toEqual(before);
  });

  it('an unknown project → 404; a token without notify → 403 insufficient_scope; a non-admin → 403', async () => {
    const before = await counts();
    const missing = await post(notifyToken, '/projects/acme%2Fnope', base());
    expect([missing.statusCode, missing.json()]).toEqual([404, { message: '404 Project Not Found' }]);
    const readOnly = await applicationToken(['read_user']);
    const scoped = await post(readOnly, `/projects/${project.id}`, base());
    expect([scoped.statusCode, scoped.json()]).toEqual([
      403,
      {
        error: 'insufficient_scope',
        error_description: 'The request requires higher privileges than provided by the access token.',
        scope: 'api notify',
      },
    ]);
    const alice = await post(await makePat(db, users.alice, ['api']), `/projects/${project.id}`, base());
    expect([alice.statusCode, alice.json()]).toEqual([403, { message: '403 Forbidden' }]);
    expect(await counts()).toEqual(before);
  });
});

describe('one-click unsubscribe and suppressed addresses, end to end (RFC 8058)', () => {
  it("a project e-mail's List-Unsubscribe, POSTed as a mail client does, disables that project; GET changes nothing", async () => {
    const first = await post(notifyToken, '/projects/acme%2Fteam%2Fapi', {
      ...issue(90),
      event: 'new_issue',
      author_id: users.alice.id,
      mentioned_ids: [users.gina.id],
    });
    expect(first.statusCode, first.body).toBe(202);
    const gina = (await deliver()).get('gina@example.com')!;
    expect(header(gina, 'List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click');
    const link = /^<(https:\/\/id\.example\.org\/-\/unsubscribe\/[^>]+)>$/.exec(header(gina, 'List-Unsubscribe') ?? '');
    expect(link, header(gina, 'List-Unsubscribe')).not.toBeNull();
    const path = new URL(link![1]).pathname;
    const level = async () =>
      (
        await db
          .selectFrom('notification_settings')
          .select('level')
          .where('user_id', '=', users.gina.id)
          .where('project_id', '=', project.id)
          .executeTakeFirst()
      )?.level;

    // A link scanner's GET: a page with the button, nothing changed.
    const page = await app.inject({ method: 'GET', url: path });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(await level()).toBeUndefined();

    // The mail client's POST (RFC 8058 §3.2): no cookies, no CSRF token, exactly this body.
    const res = await app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'List-Unsubscribe=One-Click',
    });
    expect(res.statusCode).toBe(200);
    expect(await level()).toBe('disabled');

    // The next event about the project mentions gina again: she is not e-mailed.
    const second = await post(notifyToken, '/projects/acme%2Fteam%2Fapi', {
      ...issue(91),
      event: 'new_issue',
      author_id: users.alice.id,
      mentioned_ids: [users.gina.id, users.carol.id],
    });
    expect(second.statusCode, second.body).toBe(202);
    const received = await deliver();
    expect(received.has('gina@example.com')).toBe(false);
    expect(received.has('carol@example.com')).toBe(true);
  });

  it('a group e-mail carries no one-click link (a group has no project level to disable)', async () => {
    const res = await post(notifyToken, '/groups/acme', {
      event: 'new_issue',
      target: { type: 'issue', iid: 3, title: 'Plans', url: 'https://code.example.org/groups/acme/-/issues/3' },
      author_id: users.alice.id,
      idempotency_key: 'group-unsubscribe',
    });
    expect(res.statusCode, res.body).toBe(202);
    const bob = (await deliver()).get('bob@work.example.com')!;
    expect(header(bob, 'List-Unsubscribe')).toBeUndefined();
  });

  it('a suppressed address (a hard bounce) is not queued; the person is still recorded, with no message', async () => {
    await recordSuppression(db, { address: 'Bob@Work.example.com', reason: 'bounce', source: 'smtp' });
    const res = await post(notifyToken, '/projects/acme%2Fteam%2Fapi', {
      ...issue(92),
      event: 'new_issue',
      author_id: users.alice.id,
      participant_ids: [users.carol.id],
    });
    expect(res.statusCode, res.body).toBe(202);
    const { id, recipient_count } = res.json();
    const received = await deliver();
    expect([...received.keys()].sort()).toEqual(['carol@example.com']);
    expect(recipient_count).toBe(1);
    const links = await db
      .selectFrom('notification_event_recipients')
      .select(['user_id', 'mail_id'])
      .where('event_id', '=', id)
      .orderBy('user_id')
      .execute();
    expect(links).toEqual([
      { user_id: users.bob.id, mail_id: null },
      { user_id: users.carol.id, mail_id: expect.any(Number) },
    ]);
  });

  it("a purged message leaves its recipient's link with no mail_id; the other links keep theirs", async () => {
    const res = await post(notifyToken, '/projects/acme%2Fteam%2Fapi', {
      ...issue(93),
      event: 'new_issue',
      author_id: users.alice.id,
      participant_ids: [users.bob.id, users.carol.id],
    });
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json();
    const linksOf = () =>
      db
        .selectFrom('notification_event_recipients')
        .select(['user_id', 'mail_id'])
        .where('event_id', '=', id)
        .orderBy('user_id')
        .execute();
    const before = await linksOf();
    expect(before.map((l) => l.user_id)).toEqual([users.bob.id, users.carol.id]);
    const carol = before.find((l) => l.user_id === users.carol.id)!;
    expect(carol.mail_id).not.toBeNull();
    await db.deleteFrom('mail_outbox').where('id', '=', carol.mail_id!).execute();
    expect(await linksOf()).toEqual(
      before.map((l) => (l.user_id === users.carol.id ? { user_id: l.user_id, mail_id: null } : l)),
    );
  });
});
