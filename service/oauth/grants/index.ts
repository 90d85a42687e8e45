// The grant table: the token endpoint looks grant_type up here and never switches on it. Each
// module exports its grantType, the parameters it reads, its client-authentication need and its handler.
import * as authorizationCode from './authorization-code';
import * as clientCredentials from './client-credentials';
import * as deviceCode from './device-code';
import * as password from './password';
import * as refreshToken from './refresh-token';
import type { Grant } from './types';

export const GRANTS: ReadonlyMap<string, Grant> = new Map(
  ([authorizationCode, password, refreshToken, deviceCode, clientCredentials] satisfies Grant[]).map((g) => [
    g.grantType,
    g,
  ]),
);
