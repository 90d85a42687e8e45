// Notification recipients (contract §4, Lanyard's own): POST /projects/:id/notification_recipients
// and /groups/:id/notification_recipients (an administrator's token, or an application's own token
// with the `notify` scope), and GET …/notification_settings/effective
// for the caller. The rules live in domain/notifications/; this file maps HTTP to them.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import { effectiveSettings } from '../../domain/notifications/effective';
import { parseRecipientsRequest, type RecipientTarget, resolveRecipients } from '../../domain/notifications/recipients';
import { NOTIFICATION_EVENTS, NOTIFICATION_LEVELS } from '../../domain/notifications/settings';
import { NOTIFY_SCOPE } from '../../domain/scopes';
import { APPLICATION_VIEWER, findVisibleGroup, findVisibleProject, type Viewer } from '../../domain/visibility';
import { principalOf } from '../../http/authenticate';
import { apiNotFound, forbidden } from '../../http/errors';
import { mergedParams } from '../../shared/params';
import { authErrorResponses, badRequestResponse, idParams, notFoundResponse } from './schemas';

const levelSchema = { type: 'string', enum: [...NOTIFICATION_LEVELS] } as const;

export const notificationSourceSchema = {
  $id: 'NotificationSource',
  type: 'object',
  description: 'Where the effective level comes from: the project, an ancestor group, or the global setting',
  properties: {
    type: { type: 'string', enum: ['project', 'group', 'global'] },
    id: { type: ['integer', 'null'] },
    full_path: { type: ['string', 'null'] },
  },
  required: ['type', 'id', 'full_path'],
} as const;

export const notificationRecipientsSchema = {
  $id: 'NotificationRecipients',
  type: 'object',
  description: 'Who is notified of an event, at which address and why',
  properties: {
    recipients: {
      type: 'array',
      description: 'One entry per user, sorted by user id',
      items: {
        type: 'object',
        properties: {
          user_id: { type: 'integer' },
          username: { type: 'string' },
          email: {
            type: 'string',
            description: 'Nearest group notification e-mail, else the global one, else primary',
          },
          reason: { type: 'string', enum: ['mentioned', 'participating', 'watching', 'custom'] },
          level: levelSchema,
          source: { $ref: 'NotificationSource#' },
        },
        required: ['user_id', 'username', 'email', 'reason', 'level', 'source'],
      },
    },
  },
  required: ['recipients'],
} as const;

export const effectiveNotificationSettingsSchema = {
  $id: 'EffectiveNotificationSettings',
  type: 'object',
  description: "The caller's effective notification settings and where they come from",
  properties: {
    level: levelSchema,
    source: { $ref: 'NotificationSource#' },
    notification_email: { type: 'string' },
    events: { $ref: 'NotificationEvents#' },
  },
  required: ['level', 'source', 'notification_email', 'events'],
} as const;

const idList = (what: string) =>
  ({
    type: 'array',
    description: `User ids ${what} (at most 10000, each once)`,
    items: { type: 'integer' },
  }) as const;

const recipientsParams = {
  type: 'object',
  properties: {
    event: { type: 'string', description: `One of ${NOTIFICATION_EVENTS.join(', ')}` },
    author_id: { type: 'integer', description: 'Who acted (never notified of their own activity)' },
    participant_ids: idList('taking part (author, assignees, commenters)'),
    mentioned_ids: idList('mentioned'),
  },
} as const;

export const notificationRecipientsRoutes: FastifyPluginAsync<AppContext> = async (app, { db }) => {
  const tags = ['notification_settings'];

  async function targetOf(
    request: FastifyRequest,
    kind: 'group' | 'project',
    viewer: Viewer,
  ): Promise<RecipientTarget> {
    const { id } = request.params as { id: string };
    if (kind === 'group') {
      const group = await findVisibleGroup(db, viewer, id);
      if (!group) throw apiNotFound('Group');
      return { kind, group };
    }
    const project = await findVisibleProject(db, viewer, id);
    if (!project) throw apiNotFound('Project');
    return { kind, project };
  }

  for (const kind of ['project', 'group'] as const) {
    const what = kind === 'project' ? 'Project' : 'Group';
    const base = kind === 'project' ? '/projects/:id' : '/groups/:id';

    app.post(
      `${base}/notification_recipients`,
      {
        config: { applicationScope: NOTIFY_SCOPE },
        schema: {
          operationId: `resolve${what}NotificationRecipients`,
          summary: `Who is notified of an event on a ${kind}, at which address and why (admins, or an application token with notify)`,
          tags,
          params: idParams(kind),
          querystring: recipientsParams,
          body: { ...recipientsParams, nullable: true },
          response: {
            200: { $ref: 'NotificationRecipients#' },
            400: badRequestResponse,
            ...authErrorResponses,
            404: notFoundResponse(what),
          },
        },
      },
      async (request, reply) => {
        // An application's own token got here only holding notify (config.applicationScope).
        const viewer = request.apiApplication ? APPLICATION_VIEWER : principalOf(request).user;
        // Refused before the look-up: a non-admin learns nothing about the target.
        if (!viewer.is_admin) throw forbidden();
        const target = await targetOf(request, kind, viewer);
        const recipients = await resolveRecipients(db, target, parseRecipientsRequest(mergedParams(request)));
        return reply.code(200).send({ recipients });
      },
    );

    app.get(
      `${base}/notification_settings/effective`,
      {
        schema: {
          operationId: `getEffective${what}NotificationSettings`,
          summary: `The caller's effective notification settings on a ${kind}, and where they come from`,
          tags,
          params: idParams(kind),
          querystring: { type: 'object', properties: {} },
          response: {
            200: { $ref: 'EffectiveNotificationSettings#' },
            ...authErrorResponses,
            404: notFoundResponse(what),
          },
        },
      },
      async (request) => {
        const user = principalOf(request).user;
        return effectiveSettings(db, user, await targetOf(request, kind, user));
      },
    );
  }
};
