// GET /.well-known/oauth-authorization-server (RFC 8414 §3). The issuer is the public base URL.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app-context';
import { ALL_SCOPES } from '../../domain/scopes';
import { CODE_CHALLENGE_METHODS } from '../../oauth/pkce';
import { GRANTS } from '../../oauth/grants';

const strings = { type: 'array', items: { type: 'string' } } as const;
const metadataSchema = {
  type: 'object',
  properties: {
    issuer: { type: 'string' },
    authorization_endpoint: { type: 'string' },
    token_endpoint: { type: 'string' },
    revocation_endpoint: { type: 'string' },
    scopes_supported: strings,
    response_types_supported: strings,
    response_modes_supported: strings,
    grant_types_supported: strings,
    token_endpoint_auth_methods_supported: strings,
    revocation_endpoint_auth_methods_supported: strings,
    code_challenge_methods_supported: strings,
  },
  additionalProperties: false,
} as const;

export async function metadataRoutes(app: FastifyInstance, { config }: AppContext) {
  app.get(
    '/.well-known/oauth-authorization-server',
    { schema: { response: { 200: metadataSchema } } },
    async (_request, reply) => {
      // Read per request: the base URL is known only once the server listens on an ephemeral port.
      const issuer = config.publicUrl;
      const authMethods = ['client_secret_basic', 'client_secret_post', 'none'];
      return reply.header('cache-control', 'public, max-age=300').send({
        issuer,
        authorization_endpoint: `${issuer}/oauth/authorize`,
        token_endpoint: `${issuer}/oauth/token`,
        revocation_endpoint: `${issuer}/oauth/revoke`,
        scopes_supported: [...ALL_SCOPES],
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: [...GRANTS.keys()],
        token_endpoint_auth_methods_supported: authMethods,
        revocation_endpoint_auth_methods_supported: authMethods,
        code_challenge_methods_supported: [...CODE_CHALLENGE_METHODS],
      });
    },
  );
}
