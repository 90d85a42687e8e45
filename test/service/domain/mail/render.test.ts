// renderMail: the same row gives the same bytes (a retry sends what the first attempt sent, nothing
// stored), and a body cannot forge a MIME part even when the Message-ID it will carry is predictable.
import { createHash } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { buildMessage } from '../../../../service/domain/mail/message';
import { renderMail } from '../../../../service/domain/mail/render';

const settings = { publicUrl: 'https://id.example.org', from: 'Lanyard <noreply@id.example.org>' };
const row = (messageId: string, text: string) => {
  const m = buildMessage(settings, { name: 'Ada', subject: 'Hello', paragraphs: [text] });
  return {
    message_id: messageId,
    to_address: 'ada@example.com',
    from_address: m.from,
    subject: m.subject,
    text_body: m.text,
    html_body: m.html,
    headers: { 'List-Id': 'acme <acme.id.example.org>' },
    created_at: new Date('2026-11-27T04:00:00Z'),
  };
};
const boundaryOf = (raw: string) => /boundary="([^"]+)"/.exec(raw)?.[1] ?? '';

describe('renderMail', () => {
  it('renders the same row to the same bytes every time, and another row to another boundary', async () => {
    const a = row('<notification-7-42@id.example.org>', 'Issue #1 was opened.');
    const first = await renderMail(a, 'Fallback <f@id.example.org>');
    expect(await renderMail({ ...a }, 'Fallback <f@id.example.org>')).toBe(first);
    expect(first).toContain('\r\nDate: Fri, 27 Nov 2026 04:00:00 +0000\r\n');
    expect(boundaryOf(first)).toMatch(/^--_lanyard_[0-9a-f]{24}$/);
    const b = await renderMail(row('<notification-7-43@id.example.org>', 'Issue #1 was opened.'), 'F <f@x.org>');
    expect(boundaryOf(b)).not.toBe(boundaryOf(first));
  });

  it('a body holding the boundaries its predictable Message-ID would get forges no part', async () => {
    const messageId = '<notification-8-42@id.example.org>';
    // The attacker's side: the first boundaries of the chain, each hashed from the one before.
    const chain: string[] = [];
    let seed = messageId;
    for (let i = 0; i < 3; i++) {
      seed = `--_lanyard_${createHash('sha256').update(seed).digest('hex').slice(0, 24)}`;
      chain.push(seed);
    }
    const forged = chain
      .map((b) => `--${b}\nContent-Type: text/html; charset=utf-8\n\n<a href="https://evil.example">x</a>`)
      .join('\n');
    const raw = await renderMail(row(messageId, forged), 'F <f@x.org>');
    expect(chain).not.toContain(boundaryOf(raw));
    const mail = await simpleParser(raw);
    expect(mail.attachments).toEqual([]);
    expect(mail.text).toContain(forged.split('\n').join('\n'));
    expect(mail.html).not.toContain('href="https://evil.example"');
    expect(mail.html).toContain('&lt;a href=&quot;https://evil.example&quot;&gt;x&lt;/a&gt;');
  });
});
