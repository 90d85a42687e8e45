// Resource indicators (RFC 8707): which `resource` values a token may be requested for, and which
// of them name Lanyard's own API. A resource is an absolute URI without a fragment (§2); Lanyard
// takes `https` URIs, and `http` ones only on a loopback host (127.0.0.0/8, [::1], localhost: a
// developer's MCP server on their own machine, the resource-side counterpart of RFC 8252 §7.3).
// An application may narrow that to a list (`allowed_resources`, matched exactly); Lanyard's own
// API identifiers are always acceptable to an application without a list, whatever PUBLIC_URL's
// scheme. Each rule is one function here; oauth/ turns a refusal into `invalid_target`.
import { invalidField } from './errors';

/** A URI longer than this is no resource of ours (it is stored on codes and tokens). */
const MAX_RESOURCE_LENGTH = 2048;
/** Resources one request may name (each becomes part of the token's audience). */
export const MAX_RESOURCES_PER_REQUEST = 10;
/** Entries of an application's allowed_resources list. */
export const MAX_ALLOWED_RESOURCES = 50;

const LOOPBACK_HOSTNAMES = new Set(['localhost', '[::1]']);
const isLoopbackHost = (hostname: string): boolean =>
  LOOPBACK_HOSTNAMES.has(hostname) || /^127(?:\.\d{1,3}){3}$/.test(hostname);

/**
 * The path of Lanyard's API under the public URL: `<PUBLIC_URL>/api/v4` is its resource
 * identifier (RFC 9728 metadata at /.well-known/oauth-protected-resource/api/v4).
 */
export const API_RESOURCE_PATH = '/api/v4';

/**
 * The identifiers a token for Lanyard's API may carry in its audience: `<PUBLIC_URL>/api/v4`, and
 * the public URL itself — the resource of the root metadata document
 * (/.well-known/oauth-protected-resource, RFC 9728 §3.1), which clients that take the server's
 * origin as the resource send.
 */
export const apiResourceIdentifiers = (publicUrl: string): string[] => [`${publicUrl}${API_RESOURCE_PATH}`, publicUrl];

/** Why a value is no acceptable resource indicator, or undefined when it is one. */
export function resourceProblem(value: string): string | undefined {
  if (!value || value.length > MAX_RESOURCE_LENGTH || value !== value.trim() || /\s/.test(value))
    return 'must be an absolute URI';
  if (value.includes('#')) return 'must not contain a fragment';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URI';
  }
  if (url.username || url.password) return 'must not contain user information';
  if (url.protocol === 'https:' && url.hostname) return undefined;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return undefined;
  return 'must be an https URI (http only on a loopback host)';
}

/**
 * May an application with `allowed` (its allowed_resources) ask for `resource`? With a list: only
 * what it lists. Without: any acceptable resource indicator, and Lanyard's own API identifiers.
 */
export function resourceAllowed(allowed: readonly string[] | null, resource: string, publicUrl: string): boolean {
  if (resourceProblem(resource) !== undefined && !apiResourceIdentifiers(publicUrl).includes(resource)) return false;
  return allowed === null || allowed.includes(resource);
}

/**
 * The resources a request names, when every one is allowed (deduplicated, in request order), or
 * undefined when one is not, or there are too many: the caller answers `invalid_target`.
 */
export function allowedResources(
  allowed: readonly string[] | null,
  requested: readonly string[],
  publicUrl: string,
): string[] | undefined {
  const unique = [...new Set(requested)];
  if (unique.length > MAX_RESOURCES_PER_REQUEST) return undefined;
  return unique.every((r) => resourceAllowed(allowed, r, publicUrl)) ? unique : undefined;
}

/**
 * RFC 8707 §2.2: what an access token issued from a grant for `granted` resources may be for, when
 * a token request names `requested`: a subset of the grant's (any, when the grant named none). The
 * audience is what was asked for, else the grant's. Undefined: not a subset (invalid_target).
 */
export function narrowedAudience(granted: readonly string[], requested: readonly string[]): string[] | undefined {
  if (requested.length === 0) return [...granted];
  if (granted.length > 0 && !requested.every((r) => granted.includes(r))) return undefined;
  return [...requested];
}

/**
 * An application's allowed_resources as registered: null (any), or a list of acceptable resource
 * indicators (one per line in the form). An empty list means "any" too: an application that may
 * ask for no resource at all is an application whose tokens are unbound, which is what null gives.
 */
export function requireAllowedResources(values: readonly string[] | null | undefined): string[] | null {
  if (values === null || values === undefined) return null;
  const list = [
    ...new Set(
      values
        .flatMap((v) => v.split(/[\r\n]+/))
        .map((v) => v.trim())
        .filter(Boolean),
    ),
  ];
  if (list.length === 0) return null;
  if (list.length > MAX_ALLOWED_RESOURCES)
    throw invalidField('allowed_resources', `at most ${MAX_ALLOWED_RESOURCES} resources are allowed`);
  for (const r of list) {
    const problem = resourceProblem(r);
    if (problem) throw invalidField('allowed_resources', `resource "${r}" ${problem}`);
  }
  return list;
}
