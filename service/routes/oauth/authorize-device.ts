// POST /oauth/authorize_device (RFC 8628 §3.1, §3.2; GitLab's path): a device code, the user code
// to show, and where to enter it. Clients authenticate as at /oauth/token (public ones by
// client_id alone); the scopes may only narrow the application's. Answers carry Cache-Control: no-store.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app-context';
import { createDeviceGrant } from '../../domain/device-grants';
import { userGrantableScopes } from '../../domain/scopes';
import { authenticateClient, readClientCredentials } from '../../oauth/client-auth';
import { InvalidClient, InvalidRequest } from '../../oauth/errors';
import { requestedResources } from '../../oauth/resource';
import { resolveScopes } from '../../oauth/scope';
import { mergedParams, nonScalarParam, stringParam } from '../../shared/params';

const deviceAuthorizationSchema = {
  type: 'object',
  properties: {
    device_code: { type: 'string' },
    user_code: { type: 'string' },
    verification_uri: { type: 'string' },
    verification_uri_complete: { type: 'string' },
    expires_in: { type: 'integer' },
    interval: { type: 'integer' },
  },
  required: ['device_code', 'user_code', 'verification_uri', 'verification_uri_complete', 'expires_in', 'interval'],
  additionalProperties: false,
} as const;

export async function authorizeDeviceRoutes(app: FastifyInstance, { db, config }: AppContext) {
  app.post(
    '/oauth/authorize_device',
    { schema: { response: { 200: deviceAuthorizationSchema } } },
    async (request, reply) => {
      const params = mergedParams(request);
      // RFC 6749 §3.1: request parameters must not be repeated.
      if (nonScalarParam(params, ['scope'])) throw new InvalidRequest();
      const credentials = readClientCredentials(request, params);
      if (!credentials) throw new InvalidClient();
      const { application } = await authenticateClient(db, credentials, request.ip);
      const scopes = resolveScopes(stringParam(params, 'scope'), userGrantableScopes(application.scopes));
      const resources = requestedResources(params, application.allowed_resources, config.publicUrl);
      const grant = await createDeviceGrant(db, { applicationId: application.id, scopes, resources });
      // Read per request: the base URL is known only once the server listens on an ephemeral port.
      const verificationUri = `${config.publicUrl}/oauth/device`;
      return reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send({
        device_code: grant.deviceCode,
        user_code: grant.userCode,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(grant.userCode)}`,
        expires_in: grant.expiresIn,
        interval: grant.interval,
      });
    },
  );
}
