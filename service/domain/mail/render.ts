// One outbox row as an RFC 5322 message: multipart/alternative (text, then HTML), the row's
// Message-ID, Date = when it was queued, and `Auto-Submitted: auto-generated` on every message
// (RFC 3834 §5: everything Lanyard sends is automatic, so vacation responders stay quiet).
import MailComposer from 'nodemailer/lib/mail-composer';

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

/** The message as the transports send it; `from` is used when the row has no From of its own. */
export async function renderMail(mail: RenderableMail, from: string): Promise<string> {
  const composer = new MailComposer({
    from: mail.from_address ?? from,
    to: mail.to_address,
    subject: mail.subject,
    text: mail.text_body,
    html: mail.html_body,
    messageId: mail.message_id,
    date: mail.created_at,
    headers: { ...mail.headers, ...AUTOMATIC_HEADERS },
    textEncoding: 'quoted-printable',
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  const raw = await composer.compile().build();
  return raw.toString('utf8');
}

/** The envelope sender: the address inside a From header value. */
export function envelopeAddress(from: string): string {
  return /<([^<>]+)>\s*$/.exec(from)?.[1] ?? from.trim();
}
