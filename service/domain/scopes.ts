// Scopes: api (all of /api/v4), read_api (GET/HEAD on /api/v4), read_user (GET/HEAD /api/v4/user).
import { invalid } from './errors';

export const ALL_SCOPES = ['api', 'read_api', 'read_user'] as const;
export type Scope = (typeof ALL_SCOPES)[number];

/** The scopes in words, as GitLab describes them (the consent page and the applications form). */
export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  api: 'Grants complete read/write access to the API, including all groups and projects.',
  read_api: 'Grants read access to the API, including all groups and projects.',
  read_user: 'Grants read-only access to your profile through the /user API endpoint.',
};

export const isScope = (s: string): s is Scope => (ALL_SCOPES as readonly string[]).includes(s);

/** Split a space- (or comma-) separated scope string; undefined when any scope is unknown or it is empty. */
export function parseScopeString(text: string): Scope[] | undefined {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (!parts.length || !parts.every(isScope)) return undefined;
  return [...new Set(parts)] as Scope[];
}

/** Parse scopes given by an operator or a form; throws a domain error naming the bad ones. */
export function requireScopes(text: string | string[]): Scope[] {
  const parts = (Array.isArray(text) ? text.join(' ') : text).split(/[\s,]+/).filter(Boolean);
  if (!parts.length) throw invalid(`scopes must not be empty (choose from: ${ALL_SCOPES.join(', ')})`);
  const unknown = parts.filter((p) => !isScope(p));
  if (unknown.length)
    throw invalid(
      `unknown scope${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')} (choose from: ${ALL_SCOPES.join(', ')})`,
    );
  return [...new Set(parts)] as Scope[];
}

/** A scope string for the wire: space-separated, in canonical order. */
export const formatScopes = (scopes: readonly string[]): string => sortScopes(scopes).join(' ');
export const sortScopes = (scopes: readonly string[]): string[] =>
  [...scopes].sort((a, b) => ALL_SCOPES.indexOf(a as Scope) - ALL_SCOPES.indexOf(b as Scope));
