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

/**
 * `sudo` (contract §1): acting as another user with the `Sudo` header. Only administrators'
 * personal access tokens may carry it, so it is not among the scopes applications get by default.
 */
export const SUDO_SCOPE = 'sudo';
/** The scopes a personal access token may carry (sudo: administrators only). */
export const PERSONAL_ACCESS_TOKEN_SCOPES = [...ALL_SCOPES, SUDO_SCOPE] as const;

/** Split a space- (or comma-) separated scope string; undefined when any scope is unknown or it is empty. */
export function parseScopeString(text: string): Scope[] | undefined {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (!parts.length || !parts.every(isScope)) return undefined;
  return [...new Set(parts)] as Scope[];
}

/** Parse scopes given by an operator or a form; throws a domain error naming the bad ones. */
export function requireScopes<S extends string = Scope>(
  text: string | string[],
  allowed: readonly S[] = ALL_SCOPES as unknown as readonly S[],
): S[] {
  const parts = (Array.isArray(text) ? text.join(' ') : text).split(/[\s,]+/).filter(Boolean);
  if (!parts.length) throw invalid(`scopes must not be empty (choose from: ${allowed.join(', ')})`);
  const unknown = parts.filter((p) => !(allowed as readonly string[]).includes(p));
  if (unknown.length)
    throw invalid(
      `unknown scope${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')} (choose from: ${allowed.join(', ')})`,
    );
  return [...new Set(parts)] as S[];
}

/** A scope string for the wire: space-separated, in canonical order. */
export const formatScopes = (scopes: readonly string[]): string => sortScopes(scopes).join(' ');
const SCOPE_ORDER: readonly string[] = PERSONAL_ACCESS_TOKEN_SCOPES;
export const sortScopes = (scopes: readonly string[]): string[] =>
  [...scopes].sort((a, b) => SCOPE_ORDER.indexOf(a) - SCOPE_ORDER.indexOf(b));
