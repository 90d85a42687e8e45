// Redirect URIs: what may be registered, and how a request's URI matches a registered one.
// Exact string match, except loopback IP literals whose port may differ (RFC 8252 §7.3).
// javascript:, data:, vbscript: and URIs with a fragment can never be registered (RFC 6749 §3.1.2).
import { invalidField } from './errors';

const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:']);

/** The problem with a redirect URI for registration, or undefined when it is acceptable. */
export function redirectUriProblem(uri: string): string | undefined {
  if (!uri || uri !== uri.trim()) return `redirect URI "${uri}" is invalid`;
  if (uri.includes('#')) return `redirect URI "${uri}" must not contain a fragment`;
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return `redirect URI "${uri}" is not an absolute URI`;
  }
  if (FORBIDDEN_SCHEMES.has(u.protocol.toLowerCase()))
    return `redirect URI "${uri}" uses a forbidden scheme (${u.protocol})`;
  if ((u.protocol === 'http:' || u.protocol === 'https:') && !u.hostname) return `redirect URI "${uri}" has no host`;
  return undefined;
}

export function requireRedirectUris(uris: string[], field = 'redirect_uri', required = true): string[] {
  const list = uris
    .flatMap((u) => u.split(/[\r\n]+/))
    .map((u) => u.trim())
    .filter(Boolean);
  if (required && !list.length) throw invalidField(field, 'at least one redirect URI is required');
  for (const uri of list) {
    const problem = redirectUriProblem(uri);
    if (problem) throw invalidField(field, problem);
  }
  return [...new Set(list)];
}

/**
 * RP-Initiated Logout 1.0 §3: where end_session may send the person back. Registered under the
 * same rules as redirect URIs (none is fine), and matched exactly, loopback ports included.
 */
export const requirePostLogoutRedirectUris = (uris: string[]): string[] =>
  requireRedirectUris(uris, 'post_logout_redirect_uri', false);

export const matchPostLogoutRedirectUri = (registered: readonly string[], requested: string): boolean =>
  registered.includes(requested);

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]']);

/** Does `requested` match one of `registered`? */
export function matchRedirectUri(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  let req: URL;
  try {
    req = new URL(requested);
  } catch {
    return false;
  }
  if (req.protocol !== 'http:' || !LOOPBACK_HOSTS.has(req.hostname) || requested.includes('#')) return false;
  return registered.some((r) => {
    try {
      const reg = new URL(r);
      return (
        reg.protocol === 'http:' &&
        reg.hostname === req.hostname &&
        reg.pathname === req.pathname &&
        reg.search === req.search &&
        reg.username === req.username &&
        reg.password === req.password
      );
    } catch {
      return false;
    }
  });
}
