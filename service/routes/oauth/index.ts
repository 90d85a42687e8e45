// /oauth/*, discovery and JWKS: one file per endpoint.
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app-context';
import type { SigningKeySource } from '../../domain/signing-keys';
import { authorizeRoutes } from './authorize';
import { authorizeDeviceRoutes } from './authorize-device';
import { deviceRoutes } from './device';
import { introspectRoutes } from './introspect';
import { jwksRoutes } from './jwks';
import { logoutRoutes } from './logout';
import { metadataRoutes } from './metadata';
import { protectedResourceRoutes } from './protected-resource';
import { registrationRoutes } from './register';
import { revokeRoutes } from './revoke';
import { tokenInfoRoutes } from './token-info';
import { tokenRoutes } from './token';
import { userinfoRoutes } from './userinfo';

/** The OAuth routes also sign ID tokens and publish the keys. */
export interface OAuthRoutesContext extends AppContext {
  signingKeys: SigningKeySource;
}

export const oauthRoutes: FastifyPluginAsync<OAuthRoutesContext> = async (app, ctx) => {
  await authorizeRoutes(app, ctx);
  await tokenRoutes(app, ctx);
  await authorizeDeviceRoutes(app, ctx);
  await deviceRoutes(app, ctx);
  await revokeRoutes(app, ctx);
  await tokenInfoRoutes(app, ctx);
  await introspectRoutes(app, ctx);
  await userinfoRoutes(app, ctx);
  await jwksRoutes(app, ctx);
  await logoutRoutes(app, ctx);
  await metadataRoutes(app, ctx);
  await protectedResourceRoutes(app, ctx);
  await registrationRoutes(app, ctx);
};
