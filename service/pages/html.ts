// Server-rendered pages, shared by routes/web and routes/oauth: a tagged template that escapes every
// interpolated value (only values built by `html` itself pass through raw), one page layout, the
// headers every page sends, and the pages both surfaces answer with (the CSRF refusal).
import type { FastifyReply } from 'fastify';

export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};
export const escapeHtml = (text: string): string => text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]);

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0];
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1];
  });
  return new SafeHtml(out);
}

const STYLE = `body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#222}
label{display:block;margin:.8rem 0 .2rem}input[type=text],input[type=password],textarea{width:100%;padding:.4rem;box-sizing:border-box}
button{margin:.8rem .4rem 0 0;padding:.4rem 1rem}.error{color:#a00}.secret{font-family:monospace;background:#f4f4f4;padding:.3rem;word-break:break-all}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem;text-align:left;vertical-align:top}`;

/**
 * Security headers of every page: no framing (clickjacking of the consent button), no scripts
 * at all, nothing cached (pages carry CSRF tokens and, once, secrets).
 */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
} as const;

export function layout(title: string, body: SafeHtml, signedInAs?: string): string {
  return html`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Lanyard</title><style>${new SafeHtml(STYLE)}</style></head>
<body>${signedInAs ? html`<p>Signed in as <strong>${signedInAs}</strong> · <a href="/profile/applications">Applications</a> · <a href="/users/sign_out">Sign out</a></p>` : ''}
<h1>${title}</h1>
${body}
</body></html>
`.value;
}

export function sendPage(reply: FastifyReply, status: number, title: string, body: SafeHtml, signedInAs?: string) {
  return reply
    .code(status)
    .headers(PAGE_HEADERS)
    .send(layout(title, body, signedInAs));
}

export const csrfField = (token: string) => html`<input type="hidden" name="authenticity_token" value="${token}">`;

/** A 302 that is never cached (Location may carry a code). */
export function redirect(reply: FastifyReply, location: string) {
  return reply.code(302).header('cache-control', 'no-store').header('location', location).send();
}

/** A form posted without a valid CSRF token (GitLab's 422 page): nothing was changed. */
export function csrfRejected(reply: FastifyReply) {
  return sendPage(
    reply,
    422,
    'The change you requested was rejected',
    html`<p class="error">Invalid or missing authenticity token. Go back, reload the page and try again.</p>`,
  );
}
