// Hard bounces through real SMTP (smtp-server answering 550 for one address) on real PostgreSQL:
// after the drain that address is suppressed, the next message to it is never offered to the
// server (failed, 'suppressed'), other addresses are unaffected, and clearing the suppression lets
// mail through again. Also the SQL predicate the bulk outbox insert ANDs in.
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../service/db/schema';
import { buildMessage } from '../../../service/domain/mail/message';
import { enqueueMail } from '../../../service/domain/mail/outbox';
import {
  addressNotSuppressed,
  clearSuppression,
  listSuppressions,
  recordSuppression,
} from '../../../service/domain/mail/suppressions';
import { drainOnce, type SendResult } from '../../../service/mail/sender';
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
  sink.offered.length = 0;
  sink.refuseAddress.clear();
});

const settings = { publicUrl: 'https://id.example.org', from: 'Example ID <noreply@id.example.org>' };
const queue = (to: string, kind = 'test') =>
  enqueueMail(db, {
    ...buildMessage(settings, { name: 'Ada', subject: `To ${to}`, paragraphs: ['Hello.'] }),
    to,
    kind,
  });

async function drain() {
  const results: SendResult[] = [];
  const transport = smtpTransport({ url: sink.url(), maxConnections: 1, timeoutMs: 5000 });
  try {
    const report = await drainOnce({
      db,
      transport,
      from: settings.from,
      maxAttempts: 3,
      concurrency: 1,
      onResult: (r) => results.push(r),
    });
    return { report, results };
  } finally {
    await transport.close();
  }
}

const outbox = () =>
  db.selectFrom('mail_outbox').select(['to_address', 'status', 'attempts', 'last_error']).orderBy('id').execute();

describe('hard bounces over SMTP', () => {
  it('550 at RCPT TO suppresses the address; the next message to it is never offered to the server', async () => {
    sink.refuseAddress.set('gone@example.com', { code: 550, message: '5.1.1 No such user here' });
    await queue('Gone@Example.com');
    await queue('ada@example.com');
    const first = await drain();
    expect(first.report).toEqual({ claimed: 2, sent: 1, retried: 0, failed: 1 });
    expect(sink.offered).toEqual(['Gone@example.com', 'ada@example.com']); // smtp-server lower-cases the domain
    expect(sink.received.map((m) => m.to)).toEqual([['ada@example.com']]);
    const [suppression] = await listSuppressions(db);
    expect(suppression).toMatchObject({ address: 'gone@example.com', reason: 'bounce', source: 'smtp' });
    expect(suppression.detail).toContain('550 5.1.1 No such user here');
    const audit = await db
      .selectFrom('audit_events')
      .select(['actor', 'action', 'target_type', 'target_id', 'details'])
      .where('action', 'like', 'mail_suppression.%')
      .execute();
    expect(audit).toEqual([
      {
        actor: 'system:smtp',
        action: 'mail_suppression.create',
        target_type: 'email',
        target_id: 'gone@example.com',
        details: { reason: 'bounce' },
      },
    ]);

    // The server would now accept it: it must not even be asked.
    sink.refuseAddress.clear();
    sink.offered.length = 0;
    await queue('gone@example.com', 'password_reset');
    await queue('ada@example.com');
    const second = await drain();
    expect(second.report).toEqual({ claimed: 2, sent: 1, retried: 0, failed: 1 });
    expect(sink.offered).toEqual(['ada@example.com']);
    expect(second.results.map((r) => [r.kind, r.outcome, r.detail.slice(0, 3)])).toEqual([
      ['password_reset', 'failed', 'sup'],
      ['test', 'sent', '250'],
    ]);
    expect(second.results[0].detail).toBe('suppressed');
    const rows = await outbox();
    expect(rows[2]).toEqual({
      to_address: 'gone@example.com',
      status: 'failed',
      attempts: 0,
      last_error: 'suppressed',
    });

    // Cleared: mail flows again.
    await clearSuppression(db, 'GONE@example.com', { actor: 'user:gone' });
    await queue('gone@example.com');
    expect((await drain()).report).toEqual({ claimed: 1, sent: 1, retried: 0, failed: 0 });
    expect(sink.received.at(-1)?.to).toEqual(['gone@example.com']);
    expect(await listSuppressions(db)).toEqual([]);
  });

  it('a 4xx is not a bounce; a 5xx to DATA is not about the address', async () => {
    sink.refuseAddress.set('busy@example.com', { code: 451, message: 'try later' });
    await queue('busy@example.com');
    expect((await drain()).report).toEqual({ claimed: 1, sent: 0, retried: 1, failed: 0 });
    expect(await listSuppressions(db)).toEqual([]);
  });
});

describe('the suppression list', () => {
  it('records once per address (case-insensitive), and refuses what is not an address', async () => {
    expect(await recordSuppression(db, { address: 'A@b.example', reason: 'complaint', source: 'ses' })).toBe(true);
    expect(await recordSuppression(db, { address: 'a@B.example', reason: 'bounce', source: 'ses' })).toBe(false);
    expect((await listSuppressions(db)).map((s) => [s.address, s.reason])).toEqual([['a@b.example', 'complaint']]);
    await expect(recordSuppression(db, { address: 'a@b, c@d', reason: 'bounce', source: 'ses' })).rejects.toThrow(
      'address must be one e-mail address (got "a@b, c@d")',
    );
    await expect(clearSuppression(db, 'nobody@example.com', { actor: 'cli:root' })).rejects.toThrow(
      'nobody@example.com is not suppressed',
    );
  });

  it('addressNotSuppressed filters a bulk insert in SQL', async () => {
    await recordSuppression(db, { address: 'gone@example.com', reason: 'bounce', source: 'smtp' });
    const { rows } = await sql<{ address: string }>`
      select address from (values ('ada@example.com'), ('GONE@example.com'), ('bob@example.com')) as r(address)
       where ${addressNotSuppressed(sql.ref('r.address'))} order by address`.execute(db);
    expect(rows.map((r) => r.address)).toEqual(['ada@example.com', 'bob@example.com']);
  });
});
