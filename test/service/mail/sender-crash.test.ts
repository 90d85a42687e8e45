// The sender killed with SIGKILL in the middle of a batch, then restarted: `npm start`'s real process
// (service/server.ts) drains the outbox into a real SMTP server. Every message arrives, none is lost,
// and a message that arrived twice (accepted by the server, but the sender died before recording
// it) is the same bytes, the same Message-ID, both times: at-least-once, with recognisable duplicates.
import { sql } from 'kysely';
import { simpleParser } from 'mailparser';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../service/db/local-postgres';
import { buildMessage } from '../../../service/domain/mail/message';
import { enqueueMail } from '../../../service/domain/mail/outbox';
import { createTestDatabase } from '../../support/db';
import { start } from '../../support/processes';
import { startSmtpSink } from '../../support/smtp-sink';

const N = 120;

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 40_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the sender killed mid-batch', () => {
  it('after kill -9 and a restart: every message delivered, duplicates only under the same Message-ID', async () => {
    const t = await createTestDatabase();
    const sink = await startSmtpSink();
    afterAll(() => sink.close());
    sink.delayMs = 40; // slow enough that the kill lands while messages are in flight
    const settings = { publicUrl: 'https://id.example.org', from: 'Lanyard <noreply@id.example.org>' };
    for (let i = 0; i < N; i++) {
      const m = buildMessage(settings, { name: 'Ada', subject: `crash ${i}`, paragraphs: [`body ${i}`] });
      await enqueueMail(t.db, { ...m, to: `user${i}@example.com`, kind: 'test' });
    }
    const env = {
      DATABASE_URL: t.url,
      PORT: String(await freePort()),
      LOG_LEVEL: 'warn',
      PRUNE_INTERVAL_SECONDS: '0',
      MAIL_URL: sink.url(),
      MAIL_CONCURRENCY: '4',
      MAIL_LEASE_SECONDS: '5',
    };
    const status = async () => {
      const { rows } = await sql<{ status: string; n: number }>`
        select status, count(*)::int as n from mail_outbox group by status order by status`.execute(t.db);
      return Object.fromEntries(rows.map((r) => [r.status, r.n]));
    };

    const first = start('service/server.ts', [], env);
    await until(() => sink.received.length >= 25, '25 messages through the first sender');
    first.child.kill('SIGKILL');
    await first.exited;
    const afterKill = await status();
    // Killed in the middle of a batch: claimed messages left 'sending', others not yet sent.
    expect(afterKill.sending).toBeGreaterThan(0);
    expect(afterKill.sent ?? 0).toBeLessThan(N);

    const second = start('service/server.ts', [], env);
    await until(async () => (await status()).sent === N, 'every message sent after the restart');
    second.child.kill('SIGTERM');
    expect(await second.exited, JSON.stringify(second.output())).toBe(0);

    const rows = await t.db.selectFrom('mail_outbox').select(['subject', 'message_id', 'status']).execute();
    expect(rows.every((r) => r.status === 'sent')).toBe(true);
    const idOf = new Map(rows.map((r) => [r.subject, r.message_id]));
    const idsBySubject = new Map<string, Set<string>>();
    const bytesBySubject = new Map<string, Set<string>>();
    for (const received of sink.received) {
      const mail = await simpleParser(received.raw);
      const subject = mail.subject as string;
      expect(idOf.has(subject)).toBe(true);
      if (!idsBySubject.has(subject)) idsBySubject.set(subject, new Set());
      idsBySubject.get(subject)!.add(mail.messageId as string);
      if (!bytesBySubject.has(subject)) bytesBySubject.set(subject, new Set());
      bytesBySubject.get(subject)!.add(received.raw);
    }
    // None lost: every message arrived.
    expect(idsBySubject.size).toBe(N);
    // Duplicates (if any) carry the one Message-ID of their row, and are the same bytes: the second
    // sender rendered them again, nothing rendered was stored.
    for (const [subject, ids] of idsBySubject) expect([...ids]).toEqual([idOf.get(subject)]);
    for (const bytes of bytesBySubject.values()) expect(bytes.size).toBe(1);
    expect(sink.received.length).toBeGreaterThanOrEqual(N);
    console.log(
      `kill -9 mid-batch: ${afterKill.sending} in flight at the kill, ${sink.received.length - N} duplicate(s), all under their own Message-ID`,
    );
    // Two starts of the server and the whole outbox: 10–20 s, past 30 s beside other loads; more
    // than both waits above, so a stuck sender fails with what it was waiting for.
  }, 120_000);
});
