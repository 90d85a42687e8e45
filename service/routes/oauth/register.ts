// Dynamic client registration: POST /oauth/register (RFC 7591 §3) and the client configuration
// endpoint GET|DELETE /oauth/register/:client_id (RFC 7592 §2.1, §2.3), authenticated by the
// registration access token. Mounted only when DYNAMIC_CLIENT_REGISTRATION=public (as
// node-oidc-provider leaves its registration route unmounted when the feature is off: a 404).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app-context';
import type { ApplicationRecord } from '../../domain/applications';
import {
  DYNAMIC_GRANT_TYPES,
  deleteDynamicClient,
  findDynamicClient,
  registerDynamicClient,
} from '../../domain/dynamic-clients';
import { formatScopes } from '../../domain/scopes';
import { InvalidClientMetadata, InvalidRedirectUri, OAuthError, TooManyRequests } from '../../oauth/errors';
import { bearerFromHeader } from '../../http/authenticate';

export const REGISTRATION_PATH = '/oauth/register';

const str = { type: 'string' } as const;
const strings = { type: 'array', items: str } as const;
const clientInformationSchema = {
  type: 'object',
  properties: {
    client_id: str,
    client_id_issued_at: { type: 'integer' },
    client_name: str,
    redirect_uris: strings,
    grant_types: strings,
    response_types: strings,
    token_endpoint_auth_method: str,
    scope: str,
    registration_access_token: str,
    registration_client_uri: str,
  },
  additionalProperties: false,
} as const;

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

/** RFC 7592 §2: a missing or wrong registration access token, or an unknown client: 401 alike. */
function invalidRegistrationToken(): OAuthError {
  const err = new OAuthError('invalid_token', 401, 'The access token is invalid');
  err.headers['WWW-Authenticate'] = 'Bearer error="invalid_token", error_description="The access token is invalid"';
  return err;
}

export async function registrationRoutes(app: FastifyInstance, { db, config }: AppContext) {
  if (!config.dynamicClientRegistration.enabled) return;

  /** RFC 7591 §3.2.1 / RFC 7592 §3: the client information response. */
  const information = (application: ApplicationRecord, registrationAccessToken: string) => ({
    client_id: application.uid,
    client_id_issued_at: Math.floor(application.created_at.getTime() / 1000),
    client_name: application.name,
    redirect_uris: application.redirect_uris,
    grant_types: [...DYNAMIC_GRANT_TYPES],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    scope: formatScopes(application.scopes),
    registration_access_token: registrationAccessToken,
    registration_client_uri: `${config.publicUrl}${REGISTRATION_PATH}/${application.uid}`,
  });

  app.post(REGISTRATION_PATH, { schema: { response: { 201: clientInformationSchema } } }, async (request, reply) => {
    reply.headers(NO_STORE);
    const result = await registerDynamicClient(db, {
      metadata: request.body,
      address: request.ip,
      allowedScopes: config.dynamicClientRegistration.scopes,
    });
    if (!result.ok) {
      if (result.error === 'rate_limited')
        throw new TooManyRequests(
          result.throttle,
          'Too many client registrations from this address. Retry later.',
          'throttle_client_registration',
        );
      throw result.error === 'invalid_redirect_uri'
        ? new InvalidRedirectUri(result.description)
        : new InvalidClientMetadata(result.description);
    }
    return reply.code(201).send(information(result.application, result.registrationAccessToken));
  });

  /** The client a configuration request is about, authenticated by its registration access token. */
  async function configuredClient(request: { headers: { authorization?: string }; params: unknown }) {
    const token = bearerFromHeader(request.headers.authorization);
    const { client_id: clientId } = request.params as { client_id: string };
    const application = token ? await findDynamicClient(db, clientId, token) : undefined;
    if (!token || !application) throw invalidRegistrationToken();
    return { application, token };
  }

  app.get(
    `${REGISTRATION_PATH}/:client_id`,
    { schema: { response: { 200: clientInformationSchema } } },
    async (request, reply: FastifyReply) => {
      reply.headers(NO_STORE);
      const { application, token } = await configuredClient(request);
      // §3: the response carries the registration access token; the client's own, unchanged.
      return reply.send(information(application, token));
    },
  );

  app.delete(`${REGISTRATION_PATH}/:client_id`, async (request, reply) => {
    reply.headers(NO_STORE);
    const { application } = await configuredClient(request);
    await deleteDynamicClient(db, application, request.ip);
    return reply.code(204).send();
  });
}
