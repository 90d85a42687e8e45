// The outbox's enqueue on real PostgreSQL: written in the caller's transaction (a rollback leaves no
// message), a stable RFC 5322 Message-ID per row, and bad mail refused with the field, nothing written.
import { sql } from 'kysely';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../../service/db/schema';
import { DomainError } from '../../../../service/domain/errors';
import { buildMessage } from '../../../../service/domain/mail/message';
import { enqueueMail } from '../../../../service/domain/mail/outbox';
import { createTestDatabase, resetDatabase } from '../../../support/db';

let db: Db;
beforeAll(async () => {
  db = (await createTestDatabase()).db;
});
beforeEach(() => resetDatabase(db));

const settings = { publicUrl: 'https://id.example.org', from: 'Lanyard <noreply@id.example.org>' };
const mail = () => ({
  ...buildMessage(settings, { name: 'Ada', subject: 'Hello', paragraphs: ['One.'] }),
  to: 'ada@example.com',
  kind: 'test',
});
const count = async () =>
  Number((await sql<{ n: string }>`select count(*) as n from mail_outbox`.execute(db)).rows[0].n);

describe('enqueueMail', () => {
  it('writes a pending row with a <uuid@PUBLIC_URL host> Message-ID and returns its id', async () => {
    const { id, messageId } = await enqueueMail(db, { ...mail(), headers: { 'List-Id': 'x <x.id.example.org>' } });
    expect(messageId).toMatch(
      /^<[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}@id\.example\.org>$/,
    );
    const row = await db
      .selectFrom('mail_outbox')
      .select([
        'id',
        'message_id',
        'kind',
        'to_address',
        'from_address',
        'subject',
        'headers',
        'status',
        'attempts',
        'raw',
      ])
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      id: Number(id),
      message_id: messageId,
      kind: 'test',
      to_address: 'ada@example.com',
      from_address: 'Lanyard <noreply@id.example.org>',
      subject: 'Hello',
      headers: { 'List-Id': 'x <x.id.example.org>' },
      status: 'pending',
      attempts: 0,
      raw: null,
    });
  });

  it('every message gets its own Message-ID', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await enqueueMail(db, mail())).messageId);
    expect(ids.size).toBe(20);
  });

  it("is part of the caller's transaction: a rollback leaves no message, a commit leaves one", async () => {
    await expect(
      db.transaction().execute(async (trx) => {
        await enqueueMail(trx, mail());
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await count()).toBe(0);
    await db.transaction().execute((trx) => enqueueMail(trx, mail()));
    expect(await count()).toBe(1);
  });

  it.each([
    ['to', { to: 'not-an-address' }, 'to must be one e-mail address'],
    ['to', { to: 'a@example.com, b@example.com' }, 'to must be one e-mail address'],
    ['to', { to: 'Eve <eve@example.com>' }, 'to must be one e-mail address'],
    ['to', { to: 'a@example.com\r\nBcc: eve@example.com' }, 'to must be one e-mail address'],
    ['subject', { subject: 'Hi\r\nBcc: eve@example.com' }, 'subject must be one line of text'],
    ['subject', { subject: '  ' }, "subject can't be blank"],
    ['text', { text: '' }, "text can't be blank"],
    ['kind', { kind: 'Password Reset' }, 'kind must be a lowercase identifier'],
    ['headers', { headers: { 'X-Evil': 'a\nBcc: eve@example.com' } }, 'headers X-Evil must be one line of text'],
    ['headers', { headers: { 'Message-ID': '<forged@example.com>' } }, 'headers Message-ID is set by the outbox'],
    ['headers', { headers: { 'Bad Name': 'x' } }, 'headers "Bad Name" is not a header name'],
  ])('refuses a bad %s (%j) with the field, writing nothing', async (field, change, message) => {
    const err = await enqueueMail(db, { ...mail(), ...change }).catch((e) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err.kind).toBe('invalid');
    expect(err.message).toBe(message);
    expect(Object.keys(err.details)).toEqual([field]);
    expect(await count()).toBe(0);
  });
});

describe('buildMessage', () => {
  const message = buildMessage(settings, {
    name: '  Ada <b>Lovelace</b>\r\n & co ',
    subject: 'Reset your <password>',
    paragraphs: ['Someone asked to reset the password of "ada".', 'It works for <1 hour> & once.'],
    action: { label: 'Choose a new password', path: '/users/password/edit', query: { reset_password_token: 'a&b c' } },
    closing: ['If you did not ask for this, ignore this e-mail.'],
  });
  const link = 'https://id.example.org/users/password/edit?reset_password_token=a%26b+c';

  it('greets by name and says the same in the text part', () => {
    expect(message.text).toBe(
      [
        'Hi Ada <b>Lovelace</b> & co,',
        'Someone asked to reset the password of "ada".',
        'It works for <1 hour> & once.',
        `Choose a new password:\n${link}`,
        'If you did not ask for this, ignore this e-mail.',
        '-- \nLanyard\nhttps://id.example.org/',
      ].join('\n\n'),
    );
  });

  it('escapes everything in the HTML part and links only to PUBLIC_URL, with no images', () => {
    expect(message.html).toContain('<p style="margin:0 0 16px">Hi Ada &lt;b&gt;Lovelace&lt;/b&gt; &amp; co,</p>');
    expect(message.html).toContain('<title>Reset your &lt;password&gt;</title>');
    expect(message.html).toContain('It works for &lt;1 hour&gt; &amp; once.');
    expect(message.html).toContain('&quot;ada&quot;');
    expect(message.html).not.toContain('<b>');
    const hrefs = [...message.html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]);
    expect(hrefs).toEqual([link.replace(/&/g, '&amp;'), 'https://id.example.org/']);
    expect(message.html).not.toMatch(/<img|src=|url\(/i);
  });

  it('From is MAIL_FROM and the Message-ID domain is the host of PUBLIC_URL', () => {
    expect(message.from).toBe(settings.from);
    expect(message.messageIdDomain).toBe('id.example.org');
    expect(message.subject).toBe('Reset your <password>');
  });

  it('keeps a PUBLIC_URL path prefix in links', () => {
    const m = buildMessage(
      { ...settings, publicUrl: 'https://example.org/lanyard' },
      { name: 'A', subject: 'S', paragraphs: [], action: { label: 'Go', path: '/-/profile/emails' } },
    );
    expect(m.text).toContain('Go:\nhttps://example.org/lanyard/-/profile/emails\n');
  });

  it.each(['https://evil.example/', '//evil.example/x', 'relative', '/x\\y'])(
    'refuses a link that is not a path of the site: %s',
    (path) => {
      expect(() =>
        buildMessage(settings, { name: 'A', subject: 'S', paragraphs: [], action: { label: 'Go', path } }),
      ).toThrow(`a mail link must be a path on PUBLIC_URL (got "${path}")`);
    },
  );
});
