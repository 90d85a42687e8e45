// /oauth/* and /.well-known/oauth-authorization-server (the OAuth issue fills this in).
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app';

export const oauthRoutes: FastifyPluginAsync<AppContext> = async () => {};
