// Instance audit events API (GitLab's ee/lib/api/audit_events.rb), administrators only:
// GET /audit_events (created_after/before, entity_type, entity_id; offset pagination, newest
// first) and GET /audit_events/:id, in GitLab's AuditEvent entity. The mapping from Lanyard's
// trail (actor, action, target) to GitLab's author/entity is domain/audit's.
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app-context';
import {
  AUDIT_ENTITY_TYPES,
  type AuditEntityType,
  type AuditEventRow,
  findAuditEvent,
  listAuditEvents,
} from '../../domain/audit';
import { dateTimeParam, integerParam, invalidParam, notAValidValue } from '../../http/api-params';
import { requireAdmin } from '../../http/authenticate';
import { ApiError } from '../../http/errors';
import { fetchPage, parsePagination } from '../../http/pagination';
import { authErrorResponses, badRequestResponse, paginationParams } from './schemas';

const auditEventProperties = {
  id: { type: 'integer' },
  author_id: { type: 'integer', description: 'The user who made the change; -1 for the CLI or the service itself' },
  entity_id: { type: 'integer' },
  entity_type: { type: 'string', enum: [...AUDIT_ENTITY_TYPES] },
  details: {
    type: 'object',
    additionalProperties: true,
    description:
      'event_name (Lanyard\'s action, e.g. "user.block"), author_name, author_email, target_id, target_type, target_details, ip_address, entity_path, and the event\'s own fields',
  },
  created_at: { type: 'string', format: 'date-time' },
} as const;

/** GitLab's EE::API::Entities::AuditEvent. */
export const auditEventSchema = {
  $id: 'AuditEvent',
  type: 'object',
  description: "An instance audit event (GitLab's AuditEvent entity)",
  properties: auditEventProperties,
  required: Object.keys(auditEventProperties),
} as const;

/** `personal_access_token` → `PersonalAccessToken`, as GitLab names target classes. */
const className = (type: string) =>
  type
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');

function auditEventView(row: AuditEventRow) {
  const numericTarget = row.target_id !== null && /^\d{1,15}$/.test(row.target_id);
  return {
    id: row.id,
    author_id: row.author_id,
    entity_id: row.entity_id,
    entity_type: row.entity_type,
    details: {
      ...row.details,
      event_name: row.action,
      author_name: row.author_name,
      ...(row.author_email !== null ? { author_email: row.author_email } : {}),
      target_id: numericTarget ? Number(row.target_id) : row.target_id,
      target_type: row.target_type === null ? null : className(row.target_type),
      target_details: row.target_details,
      ip_address: row.ip_address,
      entity_path: row.entity_path,
    },
    created_at: row.created_at.toISOString(),
  };
}

const listQuery = {
  type: 'object',
  properties: {
    created_after: { type: 'string', description: 'Created at or after this time (ISO 8601)' },
    created_before: { type: 'string', description: 'Created at or before this time (ISO 8601)' },
    entity_type: { type: 'string', description: `One of ${AUDIT_ENTITY_TYPES.join(', ')}` },
    entity_id: { type: 'string', description: 'The entity’s id (needs entity_type)' },
    ...paginationParams,
  },
} as const;

const tags = ['audit_events'];

export const auditEventRoutes: FastifyPluginAsync<AppContext> = async (app, { db, config }) => {
  app.get(
    '/audit_events',
    {
      schema: {
        operationId: 'listAuditEvents',
        summary: 'Instance audit events, newest first (administrators)',
        tags,
        querystring: listQuery,
        response: {
          200: { type: 'array', items: { $ref: 'AuditEvent#' } },
          400: badRequestResponse,
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      const q = request.query as Record<string, unknown>;
      const entityType = q.entity_type as string | undefined;
      if (entityType !== undefined && !(AUDIT_ENTITY_TYPES as readonly string[]).includes(entityType))
        throw notAValidValue('entity_type');
      const entityId = integerParam(q, 'entity_id');
      // Grape's `given :entity_id do requires :entity_type`.
      if (entityId !== undefined && entityType === undefined)
        throw new ApiError(400, { error: 'entity_type is missing' });
      const createdAfter = dateTimeParam(q, 'created_after');
      const createdBefore = dateTimeParam(q, 'created_before');
      const pagination = parsePagination(q);
      const rows = await fetchPage(request, reply, config.publicUrl, pagination, (window) =>
        listAuditEvents(db, {
          createdAfter,
          createdBefore,
          entityType: entityType as AuditEntityType | undefined,
          entityId,
          ...window,
        }),
      );
      return rows.map(auditEventView);
    },
  );

  app.get(
    '/audit_events/:id',
    {
      schema: {
        operationId: 'getAuditEvent',
        summary: 'One instance audit event (administrators)',
        tags,
        params: {
          type: 'object',
          properties: { id: { type: 'string', description: 'The ID of the audit event' } },
          required: ['id'],
        },
        querystring: { type: 'object', properties: {} },
        response: {
          200: { $ref: 'AuditEvent#' },
          400: badRequestResponse,
          ...authErrorResponses,
          404: { ...badRequestResponse, description: 'No such event: {"message":"404 Not found"}' },
        },
      },
    },
    async (request) => {
      requireAdmin(request);
      const { id } = request.params as { id: string };
      if (!/^\d{1,18}$/.test(id)) throw invalidParam('id');
      const event = await findAuditEvent(db, Number(id));
      // GitLab's finder raises RecordNotFound, answered {"message":"404 Not found"}.
      if (!event) throw new ApiError(404, { message: '404 Not found' });
      return auditEventView(event);
    },
  );
};
