// Server-rendered pages: sign-in and sign-out, the account overview and pages (applications, access tokens,
// two-factor, password, notifications, e-mails, active sessions), the forgotten-password pages, the one-click
// unsubscribe page and the stylesheet. (The consent page is
// GET /oauth/authorize, in routes/oauth.)
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app-context';
import { currentUser, DEFAULT_AFTER_SIGN_IN, SIGN_IN_PATH } from '../../pages/current-user';
import { redirect } from '../../pages/layout';
import { activeSessionRoutes } from './active-sessions';
import { applicationRoutes } from './applications';
import { assetRoutes } from './assets';
import { authorizedApplicationRoutes } from './authorized-applications';
import { emailRoutes } from './emails';
import { notificationRoutes } from './notifications';
import { overviewRoutes } from './overview';
import { passwordRoutes } from './password';
import { passwordResetRoutes } from './password-reset';
import { personalAccessTokenRoutes } from './personal-access-tokens';
import { twoFactorRoutes } from './two-factor';
import { signInRoutes } from './sign-in';
import { webAuthnSignInRoutes } from './webauthn';
import { unsubscribeRoutes } from './unsubscribe';

export const webRoutes: FastifyPluginAsync<AppContext> = async (app, ctx) => {
  await assetRoutes(app);
  await signInRoutes(app, ctx);
  await webAuthnSignInRoutes(app, ctx);
  await passwordResetRoutes(app, ctx);
  await applicationRoutes(app, ctx);
  await authorizedApplicationRoutes(app, ctx);
  await personalAccessTokenRoutes(app, ctx);
  await twoFactorRoutes(app, ctx);
  await passwordRoutes(app, ctx);
  await notificationRoutes(app, ctx);
  await emailRoutes(app, ctx);
  await activeSessionRoutes(app, ctx);
  await unsubscribeRoutes(app, ctx);
  await overviewRoutes(app, ctx);
  app.get('/', async (request, reply) =>
    redirect(reply, (await currentUser(app.sessions, request)) ? DEFAULT_AFTER_SIGN_IN : SIGN_IN_PATH),
  );
};
