// MAIL_URL unset: the outbox drained into RFC 5322 .eml files under LANYARD_HOME/outbox/, each
// readable by a mail parser, written atomically (no temporary file left), private to the owner,
// and rewritten in place, not duplicated, when a message is sent again.
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../service/config';
import type { Db } from '../../../service/db/schema';
import { buildMessage } from '../../../service/domain/mail/message';
import { enqueueMail } from '../../../service/domain/mail/outbox';
import { drainOnce } from '../../../service/mail/sender';
import { createMailTransport } from '../../../service/mail/transports';
import { createTestDatabase } from '../../support/db';

let db: Db;
let home: string;
beforeAll(async () => {
  db = (await createTestDatabase()).db;
  home = await mkdtemp(path.join(os.tmpdir(), 'lanyard-mail-'));
});
afterAll(() => rm(home, { recursive: true, force: true }));

describe('the .eml outbox (MAIL_URL unset)', () => {
  it('writes one parsable file per message under LANYARD_HOME/outbox, private, nothing left over', async () => {
    const config = loadConfig({ LANYARD_HOME: home, PUBLIC_URL: 'http://localhost:3000' });
    const transport = createMailTransport(config.mail);
    expect(transport.description).toBe(`file ${path.join(home, 'outbox')}`);
    const message = buildMessage(
      { publicUrl: config.publicUrl, from: config.mail.from },
      {
        name: 'Grace',
        subject: 'Confirm your e-mail',
        paragraphs: ['Hello.'],
        action: { label: 'Confirm', path: '/x' },
      },
    );
    const { messageId } = await enqueueMail(db, { ...message, to: 'grace@example.com', kind: 'test' });
    const options = { db, transport, from: config.mail.from, maxAttempts: 3, concurrency: 2 };
    expect(await drainOnce(options)).toMatchObject({ sent: 1 });

    const dir = path.join(home, 'outbox');
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^\d{8}T\d{6}Z-[0-9a-f-]{36}\.eml$/);
    expect(files[0]).toContain(messageId.slice(1, 37));
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(dir, files[0]))).mode & 0o777).toBe(0o600);

    const raw = await readFile(path.join(dir, files[0]), 'utf8');
    expect(raw).toMatch(/\r\n/);
    expect(raw).not.toMatch(/[^\r]\n/);
    const mail = await simpleParser(raw);
    expect(mail.messageId).toBe(messageId);
    expect(mail.from?.value).toEqual([{ address: 'noreply@localhost', name: 'Lanyard' }]);
    expect(mail.subject).toBe('Confirm your e-mail');
    expect(mail.text).toContain('Confirm:\nhttp://localhost:3000/x');
    expect(mail.html).toContain('href="http://localhost:3000/x"');
    const row = await db.selectFrom('mail_outbox').select(['status', 'transport_response']).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'sent', transport_response: `written to ${path.join(dir, files[0])}` });

    // Sent again (a retry after a crash): the same file, rewritten, not a second one.
    await sql`update mail_outbox set status = 'pending', next_attempt_at = now()`.execute(db);
    expect(await drainOnce(options)).toMatchObject({ sent: 1 });
    expect(await readdir(dir)).toEqual(files);
    expect(await readFile(path.join(dir, files[0]), 'utf8')).toBe(raw);
  });

  it('a directory that cannot be written: the message stays pending with the reason', async () => {
    const blocker = path.join(home, 'not-a-dir');
    await import('node:fs/promises').then((fs) => fs.writeFile(blocker, 'x'));
    const transport = createMailTransport({ ...loadConfig({}).mail, transport: { kind: 'file', directory: blocker } });
    await sql`delete from mail_outbox`.execute(db);
    await enqueueMail(db, { to: 'a@example.com', subject: 'S', text: 't', html: 'h', kind: 'test' });
    expect(await drainOnce({ db, transport, from: 'x@example.org', maxAttempts: 3, concurrency: 1 })).toMatchObject({
      retried: 1,
    });
    const row = await db.selectFrom('mail_outbox').select(['status', 'last_error']).executeTakeFirstOrThrow();
    expect(row.status).toBe('pending');
    expect(row.last_error).toMatch(/^could not write .*not-a-dir.*\.eml: EEXIST/);
  });
});
