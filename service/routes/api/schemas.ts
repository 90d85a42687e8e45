// JSON schemas shared by the /api/v4 routes: they validate requests, serialise responses (as an
// allow-list) and become the OpenAPI document, so the three never drift apart.
import { BOOLEAN_PARAM_VALUES } from '../../domain/booleans';
import { NOTIFICATION_EVENTS } from '../../domain/notifications/settings';

const errorProperties = {
  message: { description: 'GitLab-style error: a string, or field errors ({"field": ["…"]})' },
  error: { type: 'string' },
  error_description: { type: 'string' },
  scope: { type: 'string', description: 'With insufficient_scope: the scopes that would allow the request' },
} as const;

const errorResponse = (description: string) => ({ description, type: 'object', properties: errorProperties }) as const;

/** The error responses every authenticated route can give (contract §4). */
export const authErrorResponses = {
  401: errorResponse(
    'Missing, unknown, expired or revoked token: {"message":"401 Unauthorized"} or {"error":"invalid_token",…}',
  ),
  403: errorResponse(
    'Insufficient scope ({"error":"insufficient_scope",…}) or blocked user ({"message":"403 Forbidden"})',
  ),
} as const;

export const badRequestResponse = errorResponse('Invalid parameter: {"error":"<param> is invalid"} or {"message":…}');
export const notFoundResponse = (what: string) =>
  errorResponse(`{"message":"404 ${what} Not Found"}: missing, or not visible to the user`);

/**
 * A boolean parameter, as GitLab's Grape coerces it (true/false/1/0, yes/no, on/off, t/f, y/n, as
 * strings or JSON values). An enum without a `type`, so that Ajv's type coercion (which would turn
 * null or "" into false) never applies.
 */
export const booleanParam = (description: string) => ({ description, enum: [...BOOLEAN_PARAM_VALUES] }) as const;

/** `:id` of a group or project: a numeric id or the URL-encoded full path. */
export const idParams = (what: 'group' | 'project') =>
  ({
    type: 'object',
    properties: {
      id: {
        type: 'string',
        description: `The ID or URL-encoded full path of the ${what} (e.g. my-group%2Fsub${what === 'project' ? '%2Fmy-project' : ''})`,
      },
    },
    required: ['id'],
  }) as const;

export const eventsSchema = {
  $id: 'NotificationEvents',
  type: 'object',
  description: 'Only with level custom: every e-mail event flag',
  properties: Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, { type: 'boolean' }])),
  required: [...NOTIFICATION_EVENTS],
} as const;

/** GitLab's offset pagination parameters of a list (read by http/pagination.ts). */
export const paginationParams = {
  page: { type: 'integer', description: 'Current page number (default 1)' },
  per_page: { type: 'integer', description: 'Number of items per page (default 20, at most 100)' },
} as const;
