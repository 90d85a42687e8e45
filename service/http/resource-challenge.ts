// RFC 9728 §5.1: every 401 of /api/v4 tells the client where the API's protected-resource metadata
// is (`resource_metadata` in the Bearer challenge), so a client that knows only the API's URL finds
// its authorization server. GitLab's own challenge parts (realm, error, error_description) and the
// JSON bodies are kept as they are; a 401 that had no challenge (no or an unknown token) gets one.
import type { onSendHookHandler } from 'fastify';
import { API_RESOURCE_PATH } from '../domain/resources';

/** Where the metadata of `<PUBLIC_URL>/api/v4` lives (RFC 9728 §3.1: the path goes after the suffix). */
export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';
export const apiResourceMetadataUrl = (publicUrl: string): string =>
  `${publicUrl}${PROTECTED_RESOURCE_METADATA_PATH}${API_RESOURCE_PATH}`;

/** GitLab's realm, as in its invalid_token and insufficient_scope challenges. */
const REALM = 'Protected by OAuth 2.0';

/** An onSend hook for the API plugin: adds resource_metadata to each 401's Bearer challenge. */
export function resourceMetadataChallenge(publicUrl: string): onSendHookHandler {
  // A callback hook, not an async one: it runs on every /api/v4 response and awaits nothing.
  return (_request, reply, payload, done) => {
    if (reply.statusCode !== 401) return done(null, payload);
    const parameter = `resource_metadata="${apiResourceMetadataUrl(publicUrl)}"`;
    const existing = reply.getHeader('www-authenticate');
    // A DPoP refusal (RFC 9449 §7.1) names its own scheme and algorithms: the client already knows
    // the resource and its server, and is told how to prove the key; left as it is.
    if (typeof existing === 'string' && /^DPoP\s/i.test(existing)) return done(null, payload);
    reply.header(
      'www-authenticate',
      typeof existing === 'string' && /^Bearer\s/i.test(existing)
        ? `${existing}, ${parameter}`
        : `Bearer realm="${REALM}", ${parameter}`,
    );
    done(null, payload);
  };
}
