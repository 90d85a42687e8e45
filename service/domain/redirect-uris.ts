// Redirect URIs: what may be registered, and how a request's URI matches a registered one.
// Exact string match, except loopback IP literals whose port may differ (RFC 8252 §7.3).
// javascript:, data:, vbscript: and URIs with a fragment can never be registered (RFC 6749 §3.1.2).
import { invalid } from './errors';

const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:']);

/** Doorkeeper's messages for a redirect URI it refuses (config/locales/en.yml), as GitLab sends them. */
const DOORKEEPER_MESSAGES = {
  blank: "can't be blank",
  invalid_uri: 'must be a valid URI.',
  fragment_present: 'cannot contain a fragment.',
  relative_uri: 'must be an absolute URI.',
  forbidden_uri: 'is forbidden by the server.',
} as const;

interface Problem {
  message: string;
  reason: keyof typeof DOORKEEPER_MESSAGES;
}

/** The problem with a redirect URI for registration, or undefined when it is acceptable. */
function problemOf(uri: string): Problem | undefined {
  if (!uri || uri !== uri.trim()) return { message: `redirect URI "${uri}" is invalid`, reason: 'invalid_uri' };
  if (uri.includes('#'))
    return { message: `redirect URI "${uri}" must not contain a fragment`, reason: 'fragment_present' };
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return { message: `redirect URI "${uri}" is not an absolute URI`, reason: 'relative_uri' };
  }
  if (FORBIDDEN_SCHEMES.has(u.protocol.toLowerCase()))
    return { message: `redirect URI "${uri}" uses a forbidden scheme (${u.protocol})`, reason: 'forbidden_uri' };
  if ((u.protocol === 'http:' || u.protocol === 'https:') && !u.hostname)
    return { message: `redirect URI "${uri}" has no host`, reason: 'invalid_uri' };
  return undefined;
}

/**
 * The registered form of redirect URIs (one per line), or a 400-class error; its details are
 * GitLab's field error, `{"redirect_uri":[…]}` with Doorkeeper's message.
 */
export function requireRedirectUris(uris: string[], field = 'redirect_uri', required = true): string[] {
  const list = uris
    .flatMap((u) => u.split(/[\r\n]+/))
    .map((u) => u.trim())
    .filter(Boolean);
  if (required && !list.length)
    throw invalid('at least one redirect URI is required', { [field]: [DOORKEEPER_MESSAGES.blank] });
  for (const uri of list) {
    const problem = problemOf(uri);
    if (problem) throw invalid(problem.message, { [field]: [DOORKEEPER_MESSAGES[problem.reason]] });
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

/**
 * Back-Channel Logout 1.0 §2.2: an absolute http(s) URI without a fragment, where logout tokens are
 * POSTed; empty means none. Same messages and field error shape as the redirect URIs.
 */
export function requireBackchannelLogoutUri(uri: string | null): string | null {
  const value = uri?.trim() ?? '';
  if (!value) return null;
  const field = 'backchannel_logout_uri';
  const problem = problemOf(value);
  if (problem)
    throw invalid(problem.message.replace('redirect URI', 'back-channel logout URI'), {
      [field]: [DOORKEEPER_MESSAGES[problem.reason]],
    });
  const { protocol } = new URL(value);
  if (protocol !== 'http:' && protocol !== 'https:')
    throw invalid(`back-channel logout URI "${value}" must use http or https`, {
      [field]: [DOORKEEPER_MESSAGES.invalid_uri],
    });
  return value;
}

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
