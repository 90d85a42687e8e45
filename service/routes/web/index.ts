// Server-rendered pages: sign-in, consent, /profile/applications (the OAuth issue fills this in).
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app';

export const webRoutes: FastifyPluginAsync<AppContext> = async () => {};
