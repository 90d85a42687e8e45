// This site's origins, for the Origin check of form posts (form-body.ts) and the "Go back" link of
// a refused form (pages/error-page.tsx): the public URL's origin, and the one the browser used (Host).
import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** The public URL's origin (PUBLIC_URL), for the Origin check of form posts. */
    publicOrigin: string;
  }
}

export const ownOrigins = (request: FastifyRequest): string[] => [
  request.server.publicOrigin,
  `${request.protocol}://${request.headers.host ?? ''}`,
];
