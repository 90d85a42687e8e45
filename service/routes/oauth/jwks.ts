// GET /oauth/discovery/keys (RFC 7517 §5, OIDC Discovery `jwks_uri`): the current signing key, a
// staged next key, and every retired key whose ID tokens may still be unexpired. Cached like GitLab's
// JwksController but for an hour (a relying party that meets an unknown kid refetches).
import type { FastifyInstance } from 'fastify';
import { JWKS_MAX_AGE_SECONDS } from '../../domain/signing-keys';
import type { OAuthRoutesContext } from '.';

const str = { type: 'string' } as const;
const jwksSchema = {
  type: 'object',
  properties: {
    keys: {
      type: 'array',
      items: {
        type: 'object',
        properties: { kty: str, kid: str, e: str, n: str, use: str, alg: str },
        required: ['kty', 'kid', 'e', 'n', 'use', 'alg'],
        // An allow-list: a private member (d, p, q, …) can never be serialised.
        additionalProperties: false,
      },
    },
  },
  required: ['keys'],
  additionalProperties: false,
} as const;

export async function jwksRoutes(app: FastifyInstance, { signingKeys }: OAuthRoutesContext) {
  app.get('/oauth/discovery/keys', { schema: { response: { 200: jwksSchema } } }, async (_request, reply) => {
    const { jwks } = await signingKeys.load();
    // An hour, not a day: a key staged by `secrets rotate signing-key` is published at least this
    // long before it signs, so every cached copy holds it by then (issue 22).
    return reply
      .header('cache-control', `max-age=${JWKS_MAX_AGE_SECONDS}, public, must-revalidate, no-transform`)
      .send({ keys: jwks });
  });
}
