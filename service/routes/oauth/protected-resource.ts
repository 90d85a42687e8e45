// RFC 9728 protected-resource metadata for Lanyard's own API: at
// /.well-known/oauth-protected-resource/api/v4 (resource `<PUBLIC_URL>/api/v4`) and at the root form
// /.well-known/oauth-protected-resource (resource `<PUBLIC_URL>`, §3.1: the resource is the URL the
// suffix was inserted into). Both name Lanyard as the authorization server; tokens for either
// resource are accepted by /api/v4 (domain/resources.ts). bearer_methods_supported is what /api/v4
// reads: the Authorization header and the access_token query parameter (RFC 6750 §2.1, §2.3),
// never a form body.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app-context';
import { API_RESOURCE_PATH } from '../../domain/resources';
import { API_SCOPES } from '../../domain/scopes';
import { PROTECTED_RESOURCE_METADATA_PATH } from '../../http/resource-challenge';

const strings = { type: 'array', items: { type: 'string' } } as const;
const protectedResourceSchema = {
  type: 'object',
  properties: {
    resource: { type: 'string' },
    authorization_servers: strings,
    scopes_supported: strings,
    bearer_methods_supported: strings,
    resource_name: { type: 'string' },
    resource_documentation: { type: 'string' },
  },
  required: ['resource', 'authorization_servers', 'scopes_supported', 'bearer_methods_supported'],
  additionalProperties: false,
} as const;

export async function protectedResourceRoutes(app: FastifyInstance, { config }: AppContext) {
  const send = (resource: string) => ({
    resource,
    authorization_servers: [config.publicUrl],
    // The scopes that open /api/v4 to a user's token (sudo is an administrator's PAT scope).
    scopes_supported: [...API_SCOPES],
    bearer_methods_supported: ['header', 'query'],
    resource_name: 'Lanyard API (GitLab-compatible /api/v4)',
    resource_documentation: `${config.publicUrl}/api/v4/openapi.json`,
  });
  const options = { schema: { response: { 200: protectedResourceSchema } } };
  app.get(`${PROTECTED_RESOURCE_METADATA_PATH}${API_RESOURCE_PATH}`, options, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=300').send(send(`${config.publicUrl}${API_RESOURCE_PATH}`)),
  );
  app.get(PROTECTED_RESOURCE_METADATA_PATH, options, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=300').send(send(config.publicUrl)),
  );
}
