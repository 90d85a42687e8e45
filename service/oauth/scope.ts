// Scope resolution (RFC 6749 §3.3): a request may only narrow what the application (or the token
// being refreshed) holds. An omitted scope means all of it (better than GitLab's default `api`).
import { parseScopeString, sortScopes } from '../domain/scopes';
import { InvalidScope } from './errors';

/**
 * OpenID Connect Core §11: `offline_access` asks for a refresh token. With `openid` it is accepted
 * and dropped (the code flow already returns one); without it, it is an unknown scope.
 */
const OFFLINE_ACCESS = 'offline_access';

/**
 * The granted scopes, canonical order; throws InvalidScope for unknown or wider scopes, and when
 * nothing would be granted (an application holding only scopes this grant cannot give).
 */
export function resolveScopes(requested: string | undefined, allowed: readonly string[]): string[] {
  if (requested === undefined || requested.trim() === '') {
    if (!allowed.length) throw new InvalidScope();
    return sortScopes(allowed);
  }
  let parts = requested.split(/[\s,]+/).filter(Boolean);
  if (parts.includes(OFFLINE_ACCESS) && parts.includes('openid')) parts = parts.filter((s) => s !== OFFLINE_ACCESS);
  const parsed = parseScopeString(parts.join(' '));
  if (!parsed?.every((s) => allowed.includes(s))) throw new InvalidScope();
  return sortScopes(parsed);
}
