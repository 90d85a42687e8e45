// Which wire format an answer takes, decided once by path (and, for a page path, by Accept, as
// Rails does for GitLab's pages): the GitLab API's JSON under /api/v4, the OAuth JSON of the machine
// endpoints (token, revoke, introspect, userinfo, token info, device authorization, JWKS,
// registration, .well-known, health), and an HTML page for everything a browser may land on —
// every page route, the browser-facing OAuth endpoints (authorize, device, logout), unknown paths
// and /favicon.ico. The root error and not-found handlers and the 503 answer all ask here.
import type { FastifyRequest } from 'fastify';
import { isApiPath } from './api-content-type';

export type Surface = 'api' | 'oauth' | 'machine' | 'page';

/** OAuth endpoints a person's browser is sent to: their errors are pages (RFC 6749 §4.1.2.1). */
const BROWSER_OAUTH_PATHS = new Set(['/oauth/authorize', '/oauth/device', '/oauth/logout']);

const pathOf = (url: string): string => {
  const end = url.search(/[?#]/);
  return end === -1 ? url : url.slice(0, end);
};

/** `/oauth/device/authorized` belongs to `/oauth/device`; a trailing slash is the same path. */
const isBrowserOAuthPath = (path: string): boolean => {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path;
  for (const page of BROWSER_OAUTH_PATHS) if (trimmed === page || trimmed.startsWith(`${page}/`)) return true;
  return false;
};

/**
 * A page path asked for JSON alone (`Accept: application/json`, no HTML and no wildcard), as a
 * script would: it gets GitLab's {"message"} rather than markup. A browser always accepts text/html.
 */
function acceptsJsonOnly(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  if (typeof accept !== 'string') return false;
  return /\bapplication\/json\b/i.test(accept) && !/\btext\/html\b|\*\/\*/i.test(accept);
}

/**
 * - `api`: /api/v4 (GitLab's JSON; unknown routes `{"error":"404 Not Found"}`);
 * - `oauth`: the machine endpoints under /oauth (RFC 6749 §5.2 error JSON);
 * - `machine`: /.well-known and /-/health (JSON);
 * - `page`: everything else, rendered as an HTML page in the layout.
 */
export function surfaceOf(request: FastifyRequest): Surface {
  const url = request.url;
  if (isApiPath(url)) return 'api';
  const path = pathOf(url);
  if (path.startsWith('/oauth/') && !isBrowserOAuthPath(path)) return 'oauth';
  if (path.startsWith('/.well-known/') || path === '/-/health') return 'machine';
  return 'page';
}

/** True when the answer to this request is an HTML page (see surfaceOf and acceptsJsonOnly). */
export const answersWithPage = (request: FastifyRequest): boolean =>
  surfaceOf(request) === 'page' && !acceptsJsonOnly(request);
