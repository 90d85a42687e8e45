// The outbox through Lanyard's real SMTP transport (nodemailer) to a real SMTP server started here
// (smtp-server), on real PostgreSQL: what arrives is parsed with mailparser and checked by headers,
// parts and links. Faults: the server refusing (4xx, 5xx) or down → messages stay pending and come
// back after a backoff, nothing lost, one Message-ID per message; the last attempt leaves `failed`.
// The SMTP password never appears in any error, stored or reported, in any encoding.
import { sql } from 'kysely';
import { simpleParser } from 'mailparser';
import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../service/db/schema';
import { buildMessage } from '../../../service/domain/mail/message';
import { enqueueMail } from '../../../service/domain/mail/outbox';
import { renderMail } from '../../../service/domain/mail/render';
import { drainOnce, type SendResult, type SenderOptions } from '../../../service/mail/sender';
import { smtpTransport } from '../../../service/mail/smtp-transport';
import { createTestDatabase, resetDatabase } from '../../support/db';
import { type SmtpSink, startSmtpSink } from '../../support/smtp-sink';

let db: Db;
let sink: SmtpSink;
beforeAll(async () => {
  db = (await createTestDatabase()).db;
  sink = await startSmtpSink();
});
afterAll(() => sink.close());
beforeEach(async () => {
  await resetDatabase(db);
  sink.received.length = 0;
  sink.refuse = undefined;
});

const settings = { publicUrl: 'https://id.example.org', from: 'Example ID <noreply@id.example.org>' };

async function queue(n: number, to = 'ada@example.com') {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const message = buildMessage(settings, {
      name: 'Ada Lovelace',
      subject: `Message ${i}`,
      paragraphs: [`Number ${i} <of ${n}> & counting.`],
      action: { label: 'Open your e-mail settings', path: '/-/profile/emails', query: { n: String(i) } },
    });
    ids.push(await enqueueMail(db, { ...message, to, kind: 'test', headers: { 'X-Lanyard-Test': String(i) } }));
  }
  return ids;
}

function sender(url: string, extra: Partial<SenderOptions> = {}) {
  const results: SendResult[] = [];
  const transport = smtpTransport({ url, maxConnections: 2, timeoutMs: 5000 });
  const options: SenderOptions = {
    db,
    transport,
    from: 'Fallback <fallback@id.example.org>',
    maxAttempts: 3,
    concurrency: 2,
    onResult: (r) => results.push(r),
    ...extra,
  };
  return { options, results, close: () => transport.close() };
}

const rows = () =>
  db
    .selectFrom('mail_outbox')
    .select(['id', 'message_id', 'status', 'attempts', 'last_error', 'raw', 'transport_response'])
    .orderBy('id')
    .execute();
/** Make every pending message due now (skip the backoff's wait). */
const dueNow = () => sql`update mail_outbox set next_attempt_at = now() where status = 'pending'`.execute(db);

describe('delivery through SMTP', () => {
  it('delivers multipart text + HTML with the stable Message-ID, headers and links on PUBLIC_URL', async () => {
    const [queued] = await queue(1);
    const s = sender(sink.url());
    expect(await drainOnce(s.options)).toEqual({ claimed: 1, sent: 1, retried: 0, failed: 0 });
    await s.close();

    expect(sink.received).toHaveLength(1);
    const [got] = sink.received;
    expect(got.from).toBe('noreply@id.example.org');
    expect(got.to).toEqual(['ada@example.com']);
    const mail = await simpleParser(got.raw);
    expect(mail.messageId).toBe(queued.messageId);
    expect(mail.from?.value).toEqual([{ address: 'noreply@id.example.org', name: 'Example ID' }]);
    expect(mail.to && !Array.isArray(mail.to) && mail.to.value).toEqual([{ address: 'ada@example.com', name: '' }]);
    expect(mail.subject).toBe('Message 0');
    expect(mail.headers.get('auto-submitted')).toBe('auto-generated');
    expect(mail.headers.get('x-lanyard-test')).toBe('0');
    expect(mail.headers.get('content-type')).toMatchObject({ value: 'multipart/alternative' });
    expect(mail.date).toBeInstanceOf(Date);
    const link = 'https://id.example.org/-/profile/emails?n=0';
    expect(mail.text).toBe(
      `Hi Ada Lovelace,\n\nNumber 0 <of 1> & counting.\n\nOpen your e-mail settings:\n${link}\n\n-- \nLanyard\nhttps://id.example.org/`,
    );
    expect(mail.html).toContain('<p style="margin:0 0 16px">Number 0 &lt;of 1&gt; &amp; counting.</p>');
    expect([...(mail.html as string).matchAll(/href="([^"]+)"/g)].map((m) => m[1])).toEqual([
      link,
      'https://id.example.org/',
    ]);

    // The row: sent, with the server's answer; the rendered bytes are not stored (rendering is
    // deterministic: the next test sends them again).
    const [row] = await rows();
    expect(row).toMatchObject({ status: 'sent', attempts: 1, last_error: null, message_id: queued.messageId });
    expect(row.transport_response).toMatch(/^250 /);
    expect(row.raw).toBeNull();
  });

  it('accepted, then the sender died before recording it: sent again once the claim lapses, byte for byte', async () => {
    await queue(2);
    const s = sender(sink.url());
    expect(await drainOnce(s.options)).toEqual({ claimed: 2, sent: 2, retried: 0, failed: 0 });
    // What a sender killed between the server's 250 and its record leaves: claimed, the lease lapsed.
    await sql`update mail_outbox set status = 'sending', locked_until = now() - interval '1 second'`.execute(db);
    expect(await drainOnce(s.options)).toEqual({ claimed: 2, sent: 2, retried: 0, failed: 0 });
    await s.close();

    expect(sink.received).toHaveLength(4);
    const [first, second, again, againSecond] = sink.received.map((m) => m.raw);
    expect(again).toBe(first);
    expect(againSecond).toBe(second);
    expect(second).not.toBe(first);
    // Two messages, two boundaries: each drawn from its own Message-ID.
    const boundary = (raw: string) => /boundary="([^"]+)"/.exec(raw)?.[1];
    expect(boundary(first)).toMatch(/^--_lanyard_[0-9a-f]{24}$/);
    expect(boundary(second)).not.toBe(boundary(first));
    expect((await rows()).map((r) => [r.status, r.attempts])).toEqual([
      ['sent', 2],
      ['sent', 2],
    ]);
  });

  it('an address nodemailer would rewrite (upper-case or non-ASCII host) goes through sendMail: normalised, same bytes', async () => {
    await queue(1, 'Ada@Example.COM');
    await queue(1, 'ada@jõgeva.example');
    await queue(1, 'grace@example.com');
    const s = sender(sink.url());
    expect(await drainOnce(s.options)).toEqual({ claimed: 3, sent: 3, retried: 0, failed: 0 });
    await s.close();

    // The envelope as nodemailer's sendMail writes it (the host lower-cased: the other path was
    // taken), and the IDN host's mailbox reached (this server reads it back in Unicode).
    expect(sink.received.map((m) => m.to[0]).sort()).toEqual([
      'Ada@example.com',
      'ada@jõgeva.example',
      'grace@example.com',
    ]);
    // The bytes are the rendered row's, whichever way the message went.
    const stored = await db.selectFrom('mail_outbox').selectAll().execute();
    const rendered = await Promise.all(stored.map((row) => renderMail(row, 'Fallback <fallback@id.example.org>')));
    expect(sink.received.map((m) => m.raw).sort()).toEqual(rendered.sort());
  });

  it('non-ASCII names, subjects and bodies, quoted display names and long lines arrive intact', async () => {
    const m = buildMessage(
      { publicUrl: 'https://id.example.org', from: 'Équipe "ID", Paris <noreply@id.example.org>' },
      {
        name: 'Zoë Ünïcode',
        subject: 'Réinitialiser votre mot de passe 🔑 — a subject long enough to be folded over more than one line',
        paragraphs: [`Ligne très longue: ${'é'.repeat(300)}`, 'dot at the start of a line:\n.\n..'],
      },
    );
    const { messageId } = await enqueueMail(db, {
      ...m,
      to: 'zoe@example.com',
      kind: 'test',
      headers: { 'X-Note': 'naïve' },
    });
    const s = sender(sink.url());
    expect(await drainOnce(s.options)).toMatchObject({ sent: 1 });
    await s.close();
    const mail = await simpleParser(sink.received[0].raw);
    expect(mail.messageId).toBe(messageId);
    expect(mail.subject).toBe(m.subject);
    expect(mail.from?.value).toEqual([{ address: 'noreply@id.example.org', name: 'Équipe "ID", Paris' }]);
    // RFC 2047 (mailparser leaves unknown headers encoded).
    expect(mail.headers.get('x-note')).toBe('=?UTF-8?Q?na=C3=AFve?=');
    expect(mail.text).toBe(m.text);
    expect(mail.html).toBe(m.html);
    for (const line of sink.received[0].raw.split('\r\n')) expect(line.length).toBeLessThanOrEqual(998);
  });

  it('a refusing server (451 at RCPT TO): pending again after a backoff, then delivered once, same Message-ID', async () => {
    const queued = await queue(3);
    sink.refuse = { code: 451, message: 'Try again later' };
    const s = sender(sink.url());
    const before = Date.now();
    expect(await drainOnce(s.options)).toEqual({ claimed: 3, sent: 0, retried: 3, failed: 0 });
    let state = await rows();
    expect(state.map((r) => [r.status, r.attempts])).toEqual([
      ['pending', 1],
      ['pending', 1],
      ['pending', 1],
    ]);
    expect(state[0].last_error).toMatch(/^smtp:\/\/127\.0\.0\.1:\d+: EENVELOPE at RCPT TO: .*451/);
    // Backoff: not due again at once (30 s base, half of it fixed).
    const { rows: due } = await sql<{ at: Date }>`select next_attempt_at as at from mail_outbox`.execute(db);
    for (const r of due) expect(r.at.getTime()).toBeGreaterThanOrEqual(before + 15_000);
    expect(await drainOnce(s.options)).toEqual({ claimed: 0, sent: 0, retried: 0, failed: 0 });

    sink.refuse = undefined;
    await dueNow();
    expect(await drainOnce(s.options)).toEqual({ claimed: 3, sent: 3, retried: 0, failed: 0 });
    await s.close();
    state = await rows();
    expect(state.map((r) => [r.status, r.attempts, r.last_error])).toEqual([
      ['sent', 2, null],
      ['sent', 2, null],
      ['sent', 2, null],
    ]);
    const ids = await Promise.all(sink.received.map(async (m) => (await simpleParser(m.raw)).messageId));
    expect(ids.sort()).toEqual(queued.map((q) => q.messageId).sort());
  });

  it('a server that is down: pending, nothing lost; delivered when it is back', async () => {
    // A port nobody listens on: take one, then close it.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as { port: number }).port;
        probe.close(() => resolve(p));
      });
    });
    await queue(2);
    const down = sender(`smtp://127.0.0.1:${port}`);
    expect(await drainOnce(down.options)).toEqual({ claimed: 2, sent: 0, retried: 2, failed: 0 });
    await down.close();
    expect((await rows()).map((r) => r.status)).toEqual(['pending', 'pending']);
    expect((await rows())[0].last_error).toMatch(/ECONNECTION|ECONNREFUSED/);

    await dueNow();
    const up = sender(sink.url());
    expect(await drainOnce(up.options)).toEqual({ claimed: 2, sent: 2, retried: 0, failed: 0 });
    await up.close();
    expect(sink.received).toHaveLength(2);
  });

  it('a permanent refusal (550 at RCPT TO) fails the message at once, with the reason', async () => {
    await queue(1, 'nobody@example.com');
    sink.refuse = { code: 550, message: 'No such user here' };
    const s = sender(sink.url());
    expect(await drainOnce(s.options)).toEqual({ claimed: 1, sent: 0, retried: 0, failed: 1 });
    await s.close();
    const [row] = await rows();
    expect(row.status).toBe('failed');
    expect(row.attempts).toBe(1);
    expect(row.last_error).toContain('550 No such user here');
    expect(s.results.map((r) => r.outcome)).toEqual(['failed']);
  });

  it('after MAIL_MAX_ATTEMPTS temporary failures the message is failed', async () => {
    await queue(1);
    sink.refuse = { code: 421, message: 'Service not available' };
    const s = sender(sink.url(), { maxAttempts: 2 });
    expect(await drainOnce(s.options)).toMatchObject({ retried: 1 });
    await dueNow();
    expect(await drainOnce(s.options)).toMatchObject({ failed: 1 });
    await dueNow();
    expect(await drainOnce(s.options)).toMatchObject({ claimed: 0 });
    await s.close();
    expect((await rows()).map((r) => [r.status, r.attempts])).toEqual([['failed', 2]]);
  });

  it('two senders draining at once never claim the same message (SKIP LOCKED)', async () => {
    await queue(40);
    const a = sender(sink.url(), { batchSize: 7 });
    const b = sender(sink.url(), { batchSize: 7 });
    const drain = async (o: SenderOptions) => {
      while ((await drainOnce(o)).claimed > 0);
    };
    await Promise.all([drain(a.options), drain(b.options)]);
    await a.close();
    await b.close();
    expect(sink.received).toHaveLength(40);
    expect(a.results.length + b.results.length).toBe(40);
    expect((await rows()).every((r) => r.status === 'sent' && r.attempts === 1)).toBe(true);
  });
});

describe('the SMTP password stays secret', () => {
  const user = 'lanyard-relay';
  const pass = 'Sup3r/S3cret+p@ss=word';

  it('delivers with AUTH when the password is right', async () => {
    const authSink = await startSmtpSink({ auth: { user, pass } });
    await queue(1);
    const s = sender(authSink.url({ user, pass }));
    expect(await drainOnce(s.options)).toMatchObject({ sent: 1 });
    await s.close();
    await authSink.close();
    expect(authSink.received).toHaveLength(1);
  });

  it('a refused AUTH whose reply quotes the credentials: no form of the password in the error, the row or the log line', async () => {
    const authSink = await startSmtpSink({ auth: { user, pass: 'the-right-one' }, echoAuth: true });
    await queue(1);
    const s = sender(authSink.url({ user, pass }));
    expect(await drainOnce(s.options)).toMatchObject({ retried: 1 });
    await s.close();
    await authSink.close();
    const [row] = await rows();
    expect(row.last_error).toContain('535 Invalid username or password');
    expect(row.last_error).toContain('[redacted]');
    const everything = JSON.stringify({ row, results: s.results });
    const b64 = (t: string) => Buffer.from(t).toString('base64');
    for (const form of [
      pass,
      encodeURIComponent(pass),
      b64(pass),
      b64(`\0${user}\0${pass}`),
      b64(`\0${user}\0${pass}`).replace(/=+$/, ''),
      b64(`${user}:${pass}`),
      Buffer.from(pass).toString('hex'),
    ]) {
      expect(everything).not.toContain(form);
    }
    expect(everything).not.toContain('S3cret');
  });
});
