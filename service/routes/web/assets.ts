// The pages' static files, from our own origin: the stylesheet (CSP `style-src 'self'`) and the
// scripts (`script-src 'self'`: the pages' one, and the WebAuthn ceremonies') at content-hashed paths cached for a year, and the icon at
// /favicon.svg and /favicon.ico (an SVG either way; every browser asks for /favicon.ico).
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { FAVICON_SVG, SCRIPT, SCRIPT_HASH, SCRIPT_PATH } from '../../pages/script';
import { STYLESHEET, STYLESHEET_HASH, STYLESHEET_PATH } from '../../pages/stylesheet';
import { WEBAUTHN_SCRIPT_HASH, WEBAUTHN_SCRIPT_PATH, WEBAUTHN_SCRIPT_SOURCE } from '../../pages/webauthn-script';

const IMMUTABLE = 'public, max-age=31536000, immutable';

export async function assetRoutes(app: FastifyInstance) {
  const asset = (path: string, type: string, body: string, hash: string, cacheControl = IMMUTABLE) => {
    const etag = `"${hash}"`;
    app.get(path, async (request, reply) => {
      reply.headers({
        'content-type': type,
        'cache-control': cacheControl,
        etag,
        'x-content-type-options': 'nosniff',
      });
      if (request.headers['if-none-match'] === etag) return reply.code(304).send();
      return reply.code(200).send(body);
    });
  };
  asset(STYLESHEET_PATH, 'text/css; charset=utf-8', STYLESHEET, STYLESHEET_HASH);
  asset(SCRIPT_PATH, 'text/javascript; charset=utf-8', SCRIPT, SCRIPT_HASH);
  asset(WEBAUTHN_SCRIPT_PATH, 'text/javascript; charset=utf-8', WEBAUTHN_SCRIPT_SOURCE, WEBAUTHN_SCRIPT_HASH);
  const iconHash = createHash('sha256').update(FAVICON_SVG).digest('hex').slice(0, 16);
  for (const path of ['/favicon.svg', '/favicon.ico'])
    asset(path, 'image/svg+xml', FAVICON_SVG, iconHash, 'public, max-age=86400');
}
