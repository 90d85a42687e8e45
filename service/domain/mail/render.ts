// One outbox row as an RFC 5322 message: multipart/alternative (text, then HTML, both UTF-8 in
// quoted-printable), the row's Message-ID, Date = when it was queued, and `Auto-Submitted:
// auto-generated` on every message (RFC 3834 §5: everything Lanyard sends is automatic, so
// vacation responders stay quiet). Deterministic: the same row renders to the same bytes every
// time (the MIME boundary comes from the Message-ID), so a retry after a crash sends exactly what
// the first attempt sent without the outbox storing the rendered message. Composed directly (RFC
// 2047 words and quoting from nodemailer's MIME primitives, quoted-printable.ts for the bodies)
// rather than with nodemailer's stream-based MailComposer, which costs ~3 ms of CPU per message on
// a loaded machine, more than the rest of a send.
import { hash } from 'node:crypto';
import { encodeWords, quoteString } from 'nodemailer/lib/mime-funcs';
import { quotedPrintable } from './quoted-printable';

export interface RenderableMail {
  message_id: string;
  to_address: string;
  from_address: string | null;
  subject: string;
  text_body: string;
  html_body: string;
  headers: Record<string, string>;
  created_at: Date;
}

/** The headers every message carries, whatever the caller asked for. */
export const AUTOMATIC_HEADERS: Readonly<Record<string, string>> = {
  'Auto-Submitted': 'auto-generated',
  'X-Auto-Response-Suppress': 'All',
};

const ASCII = /^[\x20-\x7e]*$/;
/** RFC 5322 atext plus spaces: a display name that needs no quoting. */
const PLAIN_PHRASE = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~ ]*$/;

/** An unstructured header value: RFC 2047 words when it is not plain ASCII. */
const text = (value: string): string => (ASCII.test(value) ? value : encodeWords(value, 'Q', 52));

/** `Name <addr>` or `addr` as a header value, the name quoted or encoded as it needs. */
function address(value: string): string {
  const m = /^\s*(.*?)\s*<([^<>]+)>\s*$/.exec(value);
  if (!m?.[1]) return (m?.[2] ?? value).trim();
  const name = m[1].replace(/^"(.*)"$/, '$1');
  const phrase = !ASCII.test(name) ? encodeWords(name, 'Q', 52) : PLAIN_PHRASE.test(name) ? name : quoteString(name);
  return `${phrase} <${m[2]}>`;
}

/** RFC 5322 date-time in UTC: "Thu, 26 Nov 2026 20:57:00 +0000". */
const rfc5322Date = (d: Date): string => d.toUTCString().replace(/GMT$/, '+0000');

/** `Name: value`, folded before a space so no line passes 76 characters where it can be helped (RFC 5322 §2.2.3). */
function header(name: string, value: string): string {
  // What fits on one line is one line as it is (most headers): the loop below would not break it.
  if (name.length + 2 + value.length <= 76) return `${name}: ${value}`;
  const lines: string[] = [];
  let line = `${name}:`;
  for (const word of value.split(' ')) {
    if (line.length + 1 + word.length > 76 && line.length > name.length + 1) {
      lines.push(line);
      line = '';
    }
    line += ` ${word}`;
  }
  lines.push(line);
  return lines.join('\r\n');
}

/**
 * The last body encoded for each part: a notification's recipients share the body of their reason
 * and are queued together, so a batch of them encodes it once. One entry a part (a comparison, and
 * nothing kept alive long enough to burden the garbage collector when every body differs).
 */
const lastEncoded = { text: { body: '', encoded: '' }, html: { body: '', encoded: '' } };

function encodedBody(which: 'text' | 'html', body: string): string {
  const last = lastEncoded[which];
  if (last.body !== body) {
    last.encoded = quotedPrintable(body);
    last.body = body;
  }
  return last.encoded;
}

const part = (which: 'text' | 'html', body: string): string =>
  `Content-Type: text/${which === 'text' ? 'plain' : 'html'}; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${encodedBody(which, body)}`;

/**
 * The MIME boundary of a message: 24 hex digits hashed from its Message-ID, hashed again while a body
 * contains it (RFC 2046 §5.1.1: it must not occur in the parts). A Message-ID may be predictable
 * (a notification's names its event and user), so a body may hold the first few of the chain; it
 * cannot hold them all, and the boundary is the first it does not hold: never a forged part.
 */
function boundaryOf(mail: RenderableMail): string {
  let seed = mail.message_id;
  for (;;) {
    const boundary = `--_lanyard_${hash('sha256', seed, 'hex').slice(0, 24)}`;
    if (!mail.text_body.includes(boundary) && !mail.html_body.includes(boundary)) return boundary;
    seed = boundary;
  }
}

/**
 * The message as the transports send it (CRLF line ends); `from` is used when the row has no From of
 * its own. The same row and `from` give the same bytes on every call.
 */
export async function renderMail(mail: RenderableMail, from: string): Promise<string> {
  const boundary = boundaryOf(mail);
  const extra = Object.entries({ ...mail.headers, ...AUTOMATIC_HEADERS }).map(([name, value]) =>
    header(name, text(value)),
  );
  return [
    header('From', address(mail.from_address ?? from)),
    header('To', mail.to_address),
    header('Subject', text(mail.subject)),
    header('Message-ID', mail.message_id),
    header('Date', rfc5322Date(mail.created_at)),
    'MIME-Version: 1.0',
    ...extra,
    `Content-Type: multipart/alternative; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    part('text', mail.text_body),
    `--${boundary}`,
    part('html', mail.html_body),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

/** The envelope sender: the address inside a From header value. */
export function envelopeAddress(from: string): string {
  return /<([^<>]+)>\s*$/.exec(from)?.[1] ?? from.trim();
}
