// /oauth/* and /.well-known/oauth-authorization-server: one file per endpoint.
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app-context';
import { authorizeRoutes } from './authorize';
import { metadataRoutes } from './metadata';
import { revokeRoutes } from './revoke';
import { tokenInfoRoutes } from './token-info';
import { tokenRoutes } from './token';

export const oauthRoutes: FastifyPluginAsync<AppContext> = async (app, ctx) => {
  await authorizeRoutes(app, ctx);
  await tokenRoutes(app, ctx);
  await revokeRoutes(app, ctx);
  await tokenInfoRoutes(app, ctx);
  await metadataRoutes(app, ctx);
};
