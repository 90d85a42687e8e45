// The discovery document, one for both well-known paths: OpenID Connect Discovery 1.0 §3 at
// /.well-known/openid-configuration and RFC 8414 §3 at /.well-known/oauth-authorization-server.
// The issuer is the public base URL.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app-context';
import { DPOP_SIGNING_ALGS } from '../../domain/dpop';
import { ALL_SCOPES } from '../../domain/scopes';
import { SIGNING_ALG } from '../../domain/signing-keys';
import { GRANTS } from '../../oauth/grants';
import { CODE_CHALLENGE_METHODS } from '../../oauth/pkce';
import { END_SESSION_PATH } from './logout';
import { REGISTRATION_PATH } from './register';

/** Every claim an ID token or userinfo response may carry (GitLab's set, less what Lanyard lacks). */
export const CLAIMS_SUPPORTED = [
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'sid',
  'amr',
  'acr',
  'name',
  'nickname',
  'preferred_username',
  'website',
  'profile',
  'picture',
  'groups',
  'groups_direct',
  'email',
  'email_verified',
];

const strings = { type: 'array', items: { type: 'string' } } as const;
const str = { type: 'string' } as const;
const metadataSchema = {
  type: 'object',
  properties: {
    issuer: str,
    authorization_endpoint: str,
    token_endpoint: str,
    revocation_endpoint: str,
    introspection_endpoint: str,
    userinfo_endpoint: str,
    jwks_uri: str,
    device_authorization_endpoint: str,
    end_session_endpoint: str,
    backchannel_logout_supported: { type: 'boolean' },
    backchannel_logout_session_supported: { type: 'boolean' },
    registration_endpoint: str,
    scopes_supported: strings,
    response_types_supported: strings,
    response_modes_supported: strings,
    grant_types_supported: strings,
    token_endpoint_auth_methods_supported: strings,
    revocation_endpoint_auth_methods_supported: strings,
    introspection_endpoint_auth_methods_supported: strings,
    subject_types_supported: strings,
    id_token_signing_alg_values_supported: strings,
    claim_types_supported: strings,
    claims_supported: strings,
    claims_parameter_supported: { type: 'boolean' },
    request_parameter_supported: { type: 'boolean' },
    request_uri_parameter_supported: { type: 'boolean' },
    prompt_values_supported: strings,
    code_challenge_methods_supported: strings,
    authorization_response_iss_parameter_supported: { type: 'boolean' },
    dpop_signing_alg_values_supported: strings,
  },
  additionalProperties: false,
} as const;

export async function metadataRoutes(app: FastifyInstance, { config }: AppContext) {
  const handler = async (_request: unknown, reply: import('fastify').FastifyReply) => {
    // Read per request: the base URL is known only once the server listens on an ephemeral port.
    const issuer = config.publicUrl;
    const authMethods = ['client_secret_basic', 'client_secret_post', 'none'];
    return reply.header('cache-control', 'public, max-age=300').send({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      introspection_endpoint: `${issuer}/oauth/introspect`,
      userinfo_endpoint: `${issuer}/oauth/userinfo`,
      jwks_uri: `${issuer}/oauth/discovery/keys`,
      device_authorization_endpoint: `${issuer}/oauth/authorize_device`,
      // RP-Initiated Logout 1.0 (routes/oauth/logout.tsx).
      end_session_endpoint: `${issuer}${END_SESSION_PATH}`,
      // Back-Channel Logout 1.0 §2.1: logout tokens carry sid (domain/backchannel-logout.ts).
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
      // RFC 7591: only when DYNAMIC_CLIENT_REGISTRATION=public (the route exists only then).
      registration_endpoint: config.dynamicClientRegistration.enabled ? `${issuer}${REGISTRATION_PATH}` : undefined,
      // offline_access: accepted with openid, a no-op (the code flow returns a refresh token anyway).
      scopes_supported: [...ALL_SCOPES, 'offline_access'],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: [...GRANTS.keys()],
      token_endpoint_auth_methods_supported: authMethods,
      revocation_endpoint_auth_methods_supported: authMethods,
      // RFC 7662 §2.1: introspection needs real client credentials (a public client_id is none).
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: [SIGNING_ALG],
      claim_types_supported: ['normal'],
      claims_supported: CLAIMS_SUPPORTED,
      claims_parameter_supported: false,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      prompt_values_supported: ['none', 'login', 'consent'],
      code_challenge_methods_supported: [...CODE_CHALLENGE_METHODS],
      // RFC 9207: every authorization response carries `iss`.
      authorization_response_iss_parameter_supported: true,
      // RFC 9449 §5.1: DPoP proofs with these (asymmetric) algorithms.
      dpop_signing_alg_values_supported: [...DPOP_SIGNING_ALGS],
    });
  };
  const options = { schema: { response: { 200: metadataSchema } } };
  app.get('/.well-known/openid-configuration', options, handler);
  app.get('/.well-known/oauth-authorization-server', options, handler);
}
