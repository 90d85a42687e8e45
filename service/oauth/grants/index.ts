// The grant table: the token endpoint looks grant_type up here and never switches on it.
import { authorizationCodeGrant } from './authorization-code';
import { passwordGrant } from './password';
import { refreshTokenGrant } from './refresh-token';
import type { Grant } from './types';

export const GRANTS: ReadonlyMap<string, Grant> = new Map(
  [authorizationCodeGrant, passwordGrant, refreshTokenGrant].map((g) => [g.grantType, g]),
);

export type { Grant, GrantContext } from './types';
