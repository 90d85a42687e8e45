// GET /-/assets/lanyard-<hash>.css and /-/assets/webauthn-<hash>.js: the pages' one stylesheet and
// one script, from our own origin (CSP `style-src 'self'`, `script-src 'self'`). A name changes
// with its content, so each is cached for a year.
import type { FastifyInstance } from 'fastify';
import { STYLESHEET, STYLESHEET_HASH, STYLESHEET_PATH } from '../../pages/stylesheet';
import { WEBAUTHN_SCRIPT_HASH, WEBAUTHN_SCRIPT_PATH, WEBAUTHN_SCRIPT_SOURCE } from '../../pages/webauthn-script';

const ASSETS = [
  { path: STYLESHEET_PATH, type: 'text/css; charset=utf-8', etag: `"${STYLESHEET_HASH}"`, body: STYLESHEET },
  {
    path: WEBAUTHN_SCRIPT_PATH,
    type: 'text/javascript; charset=utf-8',
    etag: `"${WEBAUTHN_SCRIPT_HASH}"`,
    body: WEBAUTHN_SCRIPT_SOURCE,
  },
];

export async function assetRoutes(app: FastifyInstance) {
  for (const asset of ASSETS) {
    app.get(asset.path, async (request, reply) => {
      reply.headers({
        'content-type': asset.type,
        'cache-control': 'public, max-age=31536000, immutable',
        etag: asset.etag,
        'x-content-type-options': 'nosniff',
      });
      if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
      return reply.code(200).send(asset.body);
    });
  }
}
