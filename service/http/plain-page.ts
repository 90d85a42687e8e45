// A minimal, self-contained HTML answer for the cross-cutting refusals that happen before any
// route renders (503 while the database is down, 400 for a malformed form, 403 cross-origin):
// the same security headers as every page, no template, no database.
import type { FastifyReply } from 'fastify';

const escapeText = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

export function sendPlainPage(reply: FastifyReply, status: number, title: string, message: string) {
  return reply
    .code(status)
    .headers({
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin',
      'cache-control': 'no-store',
    })
    .send(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeText(title)} · Lanyard</title></head>
<body style="font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem">
<h1>${escapeText(title)}</h1>
<p>${escapeText(message)}</p>
</body></html>
`);
}
