// `lanyard-admin mail list|show|retry|test` in-process on real PostgreSQL, `mail test` through the
// real SMTP transport to a real SMTP server: tables within 80 columns, the message as sent, retries
// keeping the Message-ID, the transport's answer reported, bad input refused with nothing changed.
import { sql } from 'kysely';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../service/config';
import type { Db } from '../../service/db/schema';
import { buildMessage } from '../../service/domain/mail/message';
import { enqueueMail } from '../../service/domain/mail/outbox';
import { drainOnce } from '../../service/mail/sender';
import { createMailTransport } from '../../service/mail/transports';
import { createTestDatabase, resetDatabase } from '../support/db';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { expectUserError, runIn } from './support';

let db: Db;
let sink: SmtpSink;
beforeAll(async () => {
  ({ db } = await createTestDatabase());
  sink = await startSmtpSink();
});
afterAll(() => sink.close());
beforeEach(async () => {
  await resetDatabase(db);
  sink.received.length = 0;
  sink.refuse = undefined;
});

/** The CLI's mail services with MAIL_URL pointing at the test's SMTP server. */
function mailServices() {
  const config = loadConfig({ MAIL_URL: sink.url(), PUBLIC_URL: 'https://id.example.org' });
  return {
    services: {
      mail: () => ({
        config: config.mail,
        publicUrl: config.publicUrl,
        transport: () => createMailTransport(config.mail),
      }),
    },
  };
}

async function queue(subject: string, to = 'ada@example.com') {
  const m = buildMessage(
    { publicUrl: 'https://id.example.org', from: 'Lanyard <noreply@id.example.org>' },
    { name: 'Ada', subject, paragraphs: ['Hello.'] },
  );
  return enqueueMail(db, { ...m, to, kind: 'password_reset' });
}

async function sendAll() {
  const { services } = mailServices();
  const mail = services.mail();
  const transport = mail.transport();
  await drainOnce({ db, transport, from: mail.config.from, maxAttempts: 1, concurrency: 2 });
  await transport.close();
}

describe('mail list', () => {
  it('lists newest first in at most 80 columns, cutting long addresses and subjects', async () => {
    await queue('Reset your password');
    await sendAll();
    sink.refuse = { code: 550, message: 'No such user' };
    await queue(
      'A subject that is much too long to fit in the eighty columns of a terminal',
      'someone.with.a.very.long.address@subdomain.example.com',
    );
    await sendAll();
    sink.refuse = undefined;
    await queue('Still waiting');

    const run = await runIn(db, ['mail', 'list'], mailServices());
    expect(run.code, run.err).toBe(0);
    const lines = run.out.trimEnd().split('\n');
    expect(lines).toEqual([
      'ID  STATUS   TRIES  KIND            TO                      SUBJECT',
      '3   pending  0      password_reset  ada@example.com         Still waiting',
      '2   failed   1      password_reset  someone.with.a.very.l…  A subject that is m…',
      '1   sent     1      password_reset  ada@example.com         Reset your password',
    ]);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);

    const failed = await runIn(db, ['mail', 'list', '--status', 'failed', '--json'], mailServices());
    expect(failed.json).toEqual([
      {
        id: 2,
        message_id: expect.stringMatching(/^<[0-9a-f-]{36}@id\.example\.org>$/),
        kind: 'password_reset',
        to: 'someone.with.a.very.long.address@subdomain.example.com',
        subject: 'A subject that is much too long to fit in the eighty columns of a terminal',
        status: 'failed',
        attempts: 1,
        created_at: expect.stringMatching(/Z$/),
        sent_at: null,
        next_attempt_at: null,
        last_error: expect.stringContaining('550 No such user'),
        transport_response: null,
      },
    ]);
  });

  it('says (none) for an empty outbox, and refuses an unknown status', async () => {
    expect((await runIn(db, ['mail', 'list'])).out).toBe('(none)\n');
    await expectUserError(
      db,
      ['mail', 'list', '--status', 'lost'],
      /^lanyard-admin: status must be one of pending, sending, sent, failed \(got "lost"\)$/,
    );
    await expectUserError(
      db,
      ['mail', 'list', '--limit', '0'],
      /^lanyard-admin: --limit must be a whole number from 1 to 10000 \(got "0"\)$/,
    );
  });
});

describe('mail show', () => {
  it('prints the state and the message exactly as the server received it', async () => {
    const { messageId } = await queue('Reset your password');
    await sendAll();
    const run = await runIn(db, ['mail', 'show', '1'], mailServices());
    expect(run.code, run.err).toBe(0);
    const cut = run.out.indexOf('\n\n');
    const state = run.out.slice(0, cut);
    const message = run.out.slice(cut + 2);
    expect(state).toMatch(/^id: +1\nmessage_id: +<[^>]+>\nkind: +password_reset\nto: +ada@example\.com\n/);
    expect(state).toMatch(/\nstatus: +sent\n/);
    const received = sink.received[0].raw.replace(/\r\n/g, '\n').trimEnd();
    expect(message.trimEnd()).toBe(received);
    expect((await simpleParser(message)).messageId).toBe(messageId);

    const json = await runIn(db, ['mail', 'show', '1', '--json'], mailServices());
    expect(json.json.raw.replace(/\r\n/g, '\n').trimEnd()).toBe(received);
    expect(json.json.headers).toEqual({});
  });

  it('a message not sent yet is shown as it will be sent, and says so', async () => {
    const { messageId } = await queue('Later');
    const run = await runIn(db, ['mail', 'show', '1'], mailServices());
    expect(run.code, run.err).toBe(0);
    expect(run.out).toContain('\n\n(not sent yet: shown as it will be sent)\n');
    expect(run.out).toContain(`Message-ID: ${messageId}`);
    expect(run.out).toContain('Auto-Submitted: auto-generated');
  });

  it('refuses an unknown or malformed id', async () => {
    await expectUserError(db, ['mail', 'show', '99'], /^lanyard-admin: mail 99 not found$/);
    await expectUserError(
      db,
      ['mail', 'show', 'abc'],
      /^lanyard-admin: mail id "abc" is not a number \(see `lanyard-admin mail list`\)$/,
    );
  });
});

describe('mail retry', () => {
  it('puts a failed message back in the queue, due now, with the same Message-ID, and audits it', async () => {
    const { messageId } = await queue('Refused');
    sink.refuse = { code: 550, message: 'No' };
    await sendAll();
    sink.refuse = undefined;
    // A 550 at RCPT TO is a hard bounce: the address is suppressed until an operator clears it.
    const cleared = await runIn(db, ['mail', 'suppressions', 'remove', 'ada@example.com']);
    expect(cleared.code, cleared.err).toBe(0);
    const run = await runIn(db, ['mail', 'retry', '1', '--json'], mailServices());
    expect(run.code, run.err).toBe(0);
    expect(run.json).toMatchObject({ id: 1, message_id: messageId, status: 'pending', attempts: 0 });
    await sendAll();
    const row = await db.selectFrom('mail_outbox').select(['status', 'message_id']).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'sent', message_id: messageId });
    expect((await simpleParser(sink.received[0].raw)).messageId).toBe(messageId);
    const audit = await db.selectFrom('audit_events').select(['actor', 'action', 'target_id', 'details']).execute();
    expect(audit).toEqual([
      {
        actor: 'system:smtp',
        action: 'mail_suppression.create',
        target_id: 'ada@example.com',
        details: { reason: 'bounce' },
      },
      {
        actor: 'cli:test-operator',
        action: 'mail_suppression.clear',
        target_id: 'ada@example.com',
        details: { reason: 'bounce' },
      },
      { actor: 'cli:test-operator', action: 'mail.retry', target_id: '1', details: { was: 'failed' } },
    ]);
  });

  it('--failed puts every failed message back, and says how many', async () => {
    sink.refuse = { code: 550, message: 'No' };
    await queue('a');
    await queue('b');
    await sendAll();
    const run = await runIn(db, ['mail', 'retry', '--failed'], mailServices());
    expect(run.code, run.err).toBe(0);
    expect(run.out).toBe('2 failed message(s) queued again; the sender sends them shortly.\n');
    expect(run.err).toBe('2 failed message(s) queued again\n');
    const { rows } = await sql<{ status: string }>`select status from mail_outbox`.execute(db);
    expect(rows.map((r) => r.status)).toEqual(['pending', 'pending']);
  });

  it('refuses a sent message, a missing one, and neither or both of ID and --failed', async () => {
    await queue('Sent');
    await sendAll();
    await expectUserError(db, ['mail', 'retry', '1'], /^lanyard-admin: mail 1 was already sent \(\d{4}-.*Z\)$/);
    await expectUserError(db, ['mail', 'retry', '7'], /^lanyard-admin: mail 7 not found$/);
    await expectUserError(db, ['mail', 'retry'], /^lanyard-admin: give a message id or --failed \(not both\)/);
    await expectUserError(db, ['mail', 'retry', '1', '--failed'], /^lanyard-admin: give a message id or --failed/);
  });
});

describe('mail test', () => {
  it('sends one message through the configured transport and prints what the server answered', async () => {
    const run = await runIn(db, ['mail', 'test', '--to', 'ops@example.com'], mailServices());
    expect(run.code, run.err).toBe(0);
    expect(run.err).toBe(`Queued mail 1; sending through smtp://127.0.0.1:${sink.port} …\n`);
    expect(run.out).toMatch(new RegExp(`^Sent through smtp://127\\.0\\.0\\.1:${sink.port}: 250 .*\\nid: +1\\n`));
    expect(sink.received).toHaveLength(1);
    const mail = await simpleParser(sink.received[0].raw);
    expect(mail.subject).toBe('Lanyard test message');
    expect(mail.to && !Array.isArray(mail.to) && mail.to.text).toBe('ops@example.com');
    expect(mail.from?.value).toEqual([{ address: 'noreply@id.example.org', name: 'Lanyard' }]);
    expect(mail.text).toMatch(/^Hi,\n\nThis message was sent by `lanyard-admin mail test`/);
  });

  it('a refusal is reported with the reply, exit 1, and the message left failed (not retried behind you)', async () => {
    sink.refuse = { code: 550, message: 'Relaying denied' };
    const run = await runIn(db, ['mail', 'test', '--to', 'ops@example.com'], mailServices());
    expect(run.code).toBe(1);
    expect(run.err).toMatch(
      /\nlanyard-admin: the transport refused mail 1: smtp:\/\/127\.0\.0\.1:\d+: EENVELOPE at RCPT TO: .*550 Relaying denied.* \(left failed; `mail retry 1` sends it again\)\n$/,
    );
    const row = await db.selectFrom('mail_outbox').select(['status', 'kind']).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'failed', kind: 'test' });
  });

  it('refuses a bad address, queueing nothing', async () => {
    await expectUserError(
      db,
      ['mail', 'test', '--to', 'not an address'],
      /^lanyard-admin: to must be one e-mail address$/,
      mailServices(),
    );
  });
});
