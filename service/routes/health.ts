// GET /-/health: 200 when the database answers, 503 otherwise.
import type { FastifyPluginAsync } from 'fastify';
import { pingDatabase } from '../db/create-db';
import type { Db } from '../db/schema';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../db/unavailable';

export const healthRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.get(
    '/-/health',
    {
      schema: {
        response: {
          200: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] },
          503: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] },
        },
      },
    },
    async (request, reply) => {
      try {
        await Promise.race([
          pingDatabase(db),
          new Promise((_, reject) => setTimeout(() => reject(new Error('health check timed out')), 3000).unref()),
        ]);
        return reply.header('cache-control', 'no-store').send({ status: 'ok' });
      } catch (err) {
        request.log.warn({ err: { message: (err as Error).message } }, 'health check failed');
        return reply
          .code(503)
          .headers({ 'cache-control': 'no-store', 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) })
          .send({ status: 'unavailable' });
      }
    },
  );
};
