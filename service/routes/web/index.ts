// Server-rendered pages: sign-in and sign-out, /profile/applications. (The consent page is
// GET /oauth/authorize, in routes/oauth.)
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app-context';
import { redirect } from '../../pages/layout';
import { applicationRoutes } from './applications';
import { assetRoutes } from './assets';
import { currentUser, DEFAULT_AFTER_SIGN_IN, SIGN_IN_PATH } from './current-user';
import { signInRoutes } from './sign-in';

export const webRoutes: FastifyPluginAsync<AppContext> = async (app, ctx) => {
  await assetRoutes(app);
  await signInRoutes(app, ctx);
  await applicationRoutes(app, ctx);
  app.get('/', async (request, reply) =>
    redirect(reply, (await currentUser(app, ctx.db, request)) ? DEFAULT_AFTER_SIGN_IN : SIGN_IN_PATH),
  );
};
