// /api/v4: the GitLab-compatible REST API. @fastify/swagger is registered first so it sees every
// route below; everything but the OpenAPI document sits behind token authentication.
import swagger from '@fastify/swagger';
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app-context';
import { apiAuthentication } from '../../http/authenticate';
import { acceptEmptyJsonBodies } from '../../http/empty-json-body';
import { resourceMetadataChallenge } from '../../http/resource-challenge';
import { rejectArraysForScalars } from '../../http/scalar-params';
import { auditEventRoutes, auditEventSchema } from './audit-events';
import { groupSchema, namespaceSchema, projectSchema } from './namespace-entities';
import { metadataRoutes, metadataSchema } from './metadata';
import {
  notificationEventBodySchema,
  notificationEventReceiptSchema,
  notificationEventRoutes,
} from './notification-events';
import { namespaceRoutes } from './namespaces';
import {
  effectiveNotificationSettingsSchema,
  notificationRecipientsRoutes,
  notificationRecipientsSchema,
  notificationSourceSchema,
} from './notification-recipients';
import {
  globalNotificationSettingsSchema,
  groupNotificationSettingsSchema,
  notificationSettingsRoutes,
  notificationSettingsSchema,
} from './notification-settings';
import {
  personalAccessTokenRoutes,
  personalAccessTokenSchema,
  personalAccessTokenWithLastUsedIpsSchema,
  personalAccessTokenWithTokenSchema,
} from './personal-access-tokens';
import { applicationRoutes, applicationSchema, applicationWithSecretSchema } from './applications';
import { eventsSchema } from './schemas';
import { openapiRoutes } from './openapi';
import { currentUserSchema, userRoutes } from './user';
import { userBasicSchema, userDetailsWithAdminSchema, userSchema, usersRoutes, userWithAdminSchema } from './users';

const SCOPE_DESCRIPTIONS = {
  api: 'Complete read/write access to the API',
  read_api: 'Read access to the API (GET and HEAD)',
  read_user: 'Read the authenticated user (GET /api/v4/user)',
};

export const apiRoutes: FastifyPluginAsync<AppContext> = async (app, { db, config }) => {
  // Not `...options`: those carry this plugin's own prefix, which children must not repeat.
  const ctx: AppContext = { db, config };
  acceptEmptyJsonBodies(app);
  app.addHook('onSend', resourceMetadataChallenge(config.publicUrl));
  await app.register(swagger, {
    // Shared schemas become components named by their $id (Group, Project, …), not def-0, def-1.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Lanyard REST API (GitLab-compatible /api/v4)',
        description:
          'Personal access tokens (PRIVATE-TOKEN header or ?private_token=) or OAuth 2.0 access tokens (Authorization: Bearer or ?access_token=).',
        version: '4',
      },
      servers: [{ url: config.publicUrl }],
      components: {
        securitySchemes: {
          private_token_header: {
            type: 'apiKey',
            in: 'header',
            name: 'PRIVATE-TOKEN',
            description: 'A personal access token',
          },
          private_token_query: {
            type: 'apiKey',
            in: 'query',
            name: 'private_token',
            description: 'A personal access token',
          },
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'An OAuth 2.0 access token or a personal access token',
          },
          dpop: {
            type: 'http',
            scheme: 'DPoP',
            description:
              'A DPoP-bound OAuth 2.0 access token (RFC 9449), with a DPoP proof for each request in the DPoP header',
          },
          access_token_query: {
            type: 'apiKey',
            in: 'query',
            name: 'access_token',
            description: 'An OAuth 2.0 access token or a personal access token',
          },
          oauth2: {
            type: 'oauth2',
            flows: {
              authorizationCode: {
                authorizationUrl: `${config.publicUrl}/oauth/authorize`,
                tokenUrl: `${config.publicUrl}/oauth/token`,
                refreshUrl: `${config.publicUrl}/oauth/token`,
                scopes: SCOPE_DESCRIPTIONS,
              },
              clientCredentials: {
                tokenUrl: `${config.publicUrl}/oauth/token`,
                scopes: { notify: "An application's own token: the notification recipients and events APIs" },
              },
            },
          },
        },
      },
      security: [
        { private_token_header: [] },
        { private_token_query: [] },
        { bearer: [] },
        { dpop: [] },
        { access_token_query: [] },
        { oauth2: ['api'] },
      ],
    },
  });
  const shared = [
    eventsSchema,
    globalNotificationSettingsSchema,
    groupNotificationSettingsSchema,
    notificationSettingsSchema,
    currentUserSchema,
    groupSchema,
    namespaceSchema,
    projectSchema,
    metadataSchema,
    notificationSourceSchema,
    notificationRecipientsSchema,
    effectiveNotificationSettingsSchema,
    notificationEventBodySchema,
    notificationEventReceiptSchema,
    personalAccessTokenSchema,
    personalAccessTokenWithLastUsedIpsSchema,
    personalAccessTokenWithTokenSchema,
    userBasicSchema,
    userSchema,
    userWithAdminSchema,
    userDetailsWithAdminSchema,
    auditEventSchema,
    applicationSchema,
    applicationWithSecretSchema,
  ];
  for (const schema of shared) app.addSchema(schema);
  await app.register(openapiRoutes);
  await app.register(async (authenticated) => {
    // Route-level hooks, added as each route is (a route without scalar parameters gets no check).
    authenticated.addHook('onRoute', apiAuthentication(db, ctx.config));
    authenticated.addHook('onRoute', rejectArraysForScalars);
    await authenticated.register(userRoutes, ctx);
    await authenticated.register(notificationSettingsRoutes, ctx);
    await authenticated.register(namespaceRoutes, ctx);
    await authenticated.register(metadataRoutes);
    await authenticated.register(notificationRecipientsRoutes, ctx);
    await authenticated.register(notificationEventRoutes, ctx);
    await authenticated.register(personalAccessTokenRoutes, ctx);
    await authenticated.register(usersRoutes, ctx);
    await authenticated.register(auditEventRoutes, ctx);
    await authenticated.register(applicationRoutes, ctx);
  });
};
