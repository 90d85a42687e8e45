// The contract's error bodies, written out here (not imported from the source) so a changed
// description in the code fails the tests.
export const DESCRIPTIONS = {
  invalid_request:
    'The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed.',
  invalid_client:
    'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
  invalid_grant:
    'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
  unauthorized_client: 'The client is not authorized to perform this request using this method.',
  unsupported_grant_type: 'The authorization grant type is not supported by the authorization server.',
  invalid_scope: 'The requested scope is invalid, unknown, or malformed.',
  access_denied: 'The resource owner or authorization server denied the request.',
  unsupported_response_type: 'The authorization server does not support this response type.',
} as const;

export type ErrorCode = keyof typeof DESCRIPTIONS;
export const errorBody = (error: ErrorCode) => ({ error, error_description: DESCRIPTIONS[error] });

export const INVALID_TOKEN_BODY = {
  error: 'invalid_token',
  error_description: 'The access token is invalid',
  state: 'unauthorized',
};
export const REVOKE_FORBIDDEN_BODY = {
  error: 'unauthorized_client',
  error_description: 'You are not authorized to revoke this token',
};
