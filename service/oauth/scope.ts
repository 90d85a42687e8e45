// Scope resolution (RFC 6749 §3.3): a request may only narrow what the application (or the token
// being refreshed) holds. An omitted scope means all of it (better than GitLab's default `api`).
import { parseScopeString, sortScopes } from '../domain/scopes';
import { InvalidScope } from './errors';

/** The granted scopes, canonical order; throws InvalidScope for unknown or wider scopes. */
export function resolveScopes(requested: string | undefined, allowed: readonly string[]): string[] {
  if (requested === undefined || requested.trim() === '') return sortScopes(allowed);
  const parsed = parseScopeString(requested);
  if (!parsed?.every((s) => allowed.includes(s))) throw new InvalidScope();
  return sortScopes(parsed);
}
