// The messages Lanyard writes: a greeting by the account's name, plain paragraphs, at most one link
// on PUBLIC_URL, as a text part and an HTML part that say the same thing. Everything given is text:
// the HTML part escapes it (shared/html.ts). No images, no remote content, no tracking pixels.
// The result is what enqueueMail (outbox.ts) takes, plus the recipient and the kind.
import { escapeHtml } from '../../shared/html';

/** What the messages need from the configuration (config.ts: PUBLIC_URL, MAIL_FROM). */
export interface MailSettings {
  /** PUBLIC_URL without a trailing slash: every link is built on it. */
  publicUrl: string;
  /** MAIL_FROM: the From header, e.g. `Lanyard <noreply@lanyard.example>`. */
  from: string;
}

export interface MessageContent {
  /** The account's name, for the greeting ("Hi Ada Lovelace,"). */
  name: string;
  subject: string;
  /** The body, as paragraphs of plain text. */
  paragraphs: readonly string[];
  /** One link to a page of Lanyard: `path` is absolute on PUBLIC_URL ("/users/password/edit"). */
  action?: { label: string; path: string; query?: Record<string, string> };
  /** Paragraphs after the link ("If you did not ask for this, ignore this e-mail."). */
  closing?: readonly string[];
  /** Extra headers (e.g. List-Id); the outbox refuses the ones it sets itself. */
  headers?: Record<string, string>;
}

/** A composed message: spread it into enqueueMail with `to` and `kind`. */
export interface ComposedMessage {
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
  from: string;
  /** The right-hand side of the Message-ID: PUBLIC_URL's host. */
  messageIdDomain: string;
}

/**
 * An absolute link to `path` on PUBLIC_URL. `path` must be a path of this site ("/x", never "//x"
 * or a URL): a message can only ever link to Lanyard itself.
 */
export function publicLink(publicUrl: string, path: string, query: Record<string, string> = {}): string {
  if (!path.startsWith('/') || path.startsWith('//') || /[\\\s]/.test(path)) {
    throw new RangeError(`a mail link must be a path on PUBLIC_URL (got "${path}")`);
  }
  const url = new URL(publicUrl + path);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  return url.toString();
}

/** The greeting name: the account's name on one line, or nothing. */
const displayName = (name: string): string => name.replace(/\s+/g, ' ').trim();

/** Compose the text and HTML parts of one message. */
export function buildMessage(settings: MailSettings, content: MessageContent): ComposedMessage {
  const name = displayName(content.name);
  const greeting = name ? `Hi ${name},` : 'Hi,';
  const link = content.action && publicLink(settings.publicUrl, content.action.path, content.action.query);
  const closing = content.closing ?? [];

  const text = [
    greeting,
    ...content.paragraphs,
    ...(content.action && link ? [`${content.action.label}:\n${link}`] : []),
    ...closing,
    `-- \nLanyard\n${settings.publicUrl}/`,
  ].join('\n\n');

  const p = (t: string) => `<p style="margin:0 0 16px">${escapeHtml(t)}</p>`;
  const html = [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(content.subject)}</title></head>`,
    '<body style="font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;font-size:16px;line-height:1.5;color:#1f1f1f;max-width:600px;margin:0 auto;padding:16px">',
    p(greeting),
    ...content.paragraphs.map(p),
    ...(content.action && link
      ? [
          `<p style="margin:0 0 16px"><a href="${escapeHtml(link)}" style="color:#1f5fbf">${escapeHtml(content.action.label)}</a></p>`,
          `<p style="margin:0 0 16px;font-size:14px;color:#555">Or open this address: ${escapeHtml(link)}</p>`,
        ]
      : []),
    ...closing.map(p),
    `<p style="margin:24px 0 0;font-size:14px;color:#555">Lanyard · <a href="${escapeHtml(`${settings.publicUrl}/`)}" style="color:#555">${escapeHtml(`${settings.publicUrl}/`)}</a></p>`,
    '</body>',
    '</html>',
  ].join('\n');

  return {
    subject: content.subject,
    text,
    html,
    headers: { ...(content.headers ?? {}) },
    from: settings.from,
    messageIdDomain: new URL(settings.publicUrl).hostname,
  };
}
