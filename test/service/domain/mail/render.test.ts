// renderMail: the same row gives the same bytes (a retry sends what the first attempt sent, nothing
// stored), and a body cannot forge a MIME part even when the Message-ID it will carry is predictable;
// its quoted-printable encoder, checked against another decoder.
import { createHash } from 'node:crypto';
import libqp from 'libqp';
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { buildMessage } from '../../../../service/domain/mail/message';
import { quotedPrintable } from '../../../../service/domain/mail/quoted-printable';
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

describe('quotedPrintable', () => {
  // A decoder of its own (libqp, mailparser's), and text that is hard on an encoder: long lines,
  // "=", spaces and tabs at ends, CRLF and LF, lone CRs, multi-byte and astral characters.
  const pieces = [
    'a',
    ' ',
    '\t',
    '=',
    '==',
    'é',
    '€',
    '😀',
    '\n',
    '\r\n',
    '\r',
    'x'.repeat(80),
    '<p style="a:b">',
    '.',
  ];
  const seeded = (seed: number) => () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };

  it('decodes back to the text (line ends as CRLF), every line at most 76 characters of the allowed ones', () => {
    const random = seeded(30);
    for (let k = 0; k < 300; k++) {
      const text = Array.from(
        { length: Math.floor(random() * 120) },
        () => pieces[Math.floor(random() * pieces.length)],
      ).join('');
      const encoded = quotedPrintable(text);
      expect(libqp.decode(encoded).toString('utf8')).toBe(text.replace(/\r?\n/g, '\r\n'));
      for (const line of encoded.split('\r\n')) {
        expect(line.length).toBeLessThanOrEqual(76);
        expect(line).toMatch(/^[\x21-\x7e \t]*$/);
        expect(line).not.toMatch(/[ \t]$/);
        expect(line).not.toMatch(/=(?![0-9A-F]{2}|$)/);
      }
    }
  });

  it('leaves plain lines alone and escapes what it must', () => {
    expect(quotedPrintable('Hi Ada,\n\nOne = two. ')).toBe('Hi Ada,\r\n\r\nOne =3D two.=20');
    expect(quotedPrintable('café\r\nok\rno')).toBe('caf=C3=A9\r\nok=0Dno');
    expect(quotedPrintable('y'.repeat(76))).toBe('y'.repeat(76));
    expect(quotedPrintable('y'.repeat(77))).toBe(`${'y'.repeat(75)}=\r\nyy`);
    expect(quotedPrintable(`${'y'.repeat(74)}é`)).toBe(`${'y'.repeat(74)}=\r\n=C3=A9`);
  });
});
