// The notification intake (issue 25, Lanyard's own): POST /projects/:id/notification_events and
// /groups/:id/notification_events, from an application's own token with the `notify` scope or an
// administrator's token. The rules and the transaction live in domain/notifications/events.ts; this
// file maps HTTP to them (docs/notification-delivery.md).
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app-context';
import { type EventTarget, parseNotificationEvent, takeNotificationEvent } from '../../domain/notifications/events';
import { NOTIFICATION_EVENTS } from '../../domain/notifications/settings';
import { NOTIFY_SCOPE } from '../../domain/scopes';
import { APPLICATION_VIEWER, findVisibleGroup, findVisibleProject } from '../../domain/visibility';
import { principalOf } from '../../http/authenticate';
import { apiNotFound, forbidden } from '../../http/errors';
import { authErrorResponses, badRequestResponse, idParams, notFoundResponse } from './schemas';

const ids = (what: string) =>
  ({ type: 'array', description: `User ids ${what} (at most 10000, each once)`, items: { type: 'integer' } }) as const;

export const notificationEventBodySchema = {
  $id: 'NotificationEventBody',
  type: 'object',
  description: 'An event on a project or group: the people it concerns are e-mailed',
  properties: {
    event: { type: 'string', enum: [...NOTIFICATION_EVENTS] },
    target: {
      type: 'object',
      description: 'What the event happened to',
      properties: {
        type: { type: 'string', enum: ['issue', 'merge_request', 'pipeline', 'release', 'project'] },
        iid: { type: 'integer', description: 'Issues and merge requests: the number within the project' },
        id: { type: 'integer', description: 'Pipelines, releases and projects: their id' },
        title: { type: 'string', description: 'One line, at most 255 characters' },
        url: { type: 'string', description: 'Where the target is shown (http or https)' },
      },
    },
    author_id: { type: 'integer', description: 'Who acted (never notified of their own activity)' },
    participant_ids: ids('taking part (author, assignees, commenters)'),
    mentioned_ids: ids('mentioned'),
    summary: { type: 'string', description: 'Text quoted in the e-mail (paragraphs split by blank lines)' },
    idempotency_key: {
      type: 'string',
      description: 'The same key again (per caller and project or group) returns the first answer and e-mails nobody',
    },
  },
} as const;

export const notificationEventReceiptSchema = {
  $id: 'NotificationEventReceipt',
  type: 'object',
  description: 'The event as recorded, and how many e-mails it queued',
  properties: {
    id: { type: 'integer' },
    event: { type: 'string', enum: [...NOTIFICATION_EVENTS] },
    project_id: { type: ['integer', 'null'] },
    group_id: { type: ['integer', 'null'] },
    target_type: { type: 'string' },
    recipient_count: { type: 'integer', description: 'E-mails queued, one per recipient' },
    idempotency_key: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
  },
  required: [
    'id',
    'event',
    'project_id',
    'group_id',
    'target_type',
    'recipient_count',
    'idempotency_key',
    'created_at',
  ],
} as const;

export const notificationEventRoutes: FastifyPluginAsync<AppContext> = async (app, { db, config }) => {
  for (const kind of ['project', 'group'] as const) {
    const what = kind === 'project' ? 'Project' : 'Group';
    app.post(
      `/${kind}s/:id/notification_events`,
      {
        config: { applicationScope: NOTIFY_SCOPE },
        schema: {
          operationId: `post${what}NotificationEvent`,
          summary: `Post an event on a ${kind}: its recipients are e-mailed (admins, or an application token with notify)`,
          tags: ['notification_settings'],
          params: idParams(kind),
          body: { $ref: 'NotificationEventBody#' },
          response: {
            202: { $ref: 'NotificationEventReceipt#' },
            400: badRequestResponse,
            ...authErrorResponses,
            404: notFoundResponse(what),
            409: badRequestResponse,
          },
        },
      },
      async (request, reply) => {
        // An application's own token got here only holding notify (config.applicationScope).
        const application = request.apiApplication;
        const viewer = application ? APPLICATION_VIEWER : principalOf(request).user;
        // Refused before the look-up: a non-admin learns nothing about the target.
        if (!viewer.is_admin) throw forbidden();
        const { id } = request.params as { id: string };
        const input = parseNotificationEvent((request.body ?? {}) as Record<string, unknown>, kind);
        let target: EventTarget;
        if (kind === 'project') {
          const project = await findVisibleProject(db, viewer, id);
          if (!project) throw apiNotFound(what);
          target = { kind, project };
        } else {
          const group = await findVisibleGroup(db, viewer, id);
          if (!group) throw apiNotFound(what);
          target = { kind, group };
        }
        const caller = application ? `application:${application.applicationId}` : `user:${viewer.id}`;
        // Read per request: tests point PUBLIC_URL at the port they listen on after the app is built.
        const mail = { publicUrl: config.publicUrl, from: config.mail.from };
        const ring = await app.sessions.keyRing().load();
        const receipt = await takeNotificationEvent(db, mail, ring, caller, target, input);
        return reply.code(202).send(receipt);
      },
    );
  }
};
