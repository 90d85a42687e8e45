// GET /-/assets/lanyard-<hash>.css: the pages' one stylesheet, from our own origin (CSP
// `style-src 'self'`). The name changes with the content, so it is cached for a year.
import type { FastifyInstance } from 'fastify';
import { STYLESHEET, STYLESHEET_HASH, STYLESHEET_PATH } from '../../pages/stylesheet';

const ETAG = `"${STYLESHEET_HASH}"`;

export async function assetRoutes(app: FastifyInstance) {
  app.get(STYLESHEET_PATH, async (request, reply) => {
    reply.headers({
      'content-type': 'text/css; charset=utf-8',
      'cache-control': 'public, max-age=31536000, immutable',
      etag: ETAG,
      'x-content-type-options': 'nosniff',
    });
    if (request.headers['if-none-match'] === ETAG) return reply.code(304).send();
    return reply.code(200).send(STYLESHEET);
  });
}
