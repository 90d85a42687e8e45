// Notification settings: GET|PUT /notification_settings (global), /groups/:id/… and
// /projects/:id/… (`:id` numeric or URL-encoded full path). Scope api, or read_api for GET.
// Validation and the write live in domain/notifications/settings; this file maps HTTP to it.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import { apiAuditActor, principalOf } from '../../http/authenticate';
import { apiNotFound } from '../../http/errors';
import { mergedParams } from '../../shared/params';
import {
  getNotificationSettings,
  getVisibleNotificationSettings,
  globalNotificationSettingsView,
  NOTIFICATION_EVENTS,
  NOTIFICATION_LEVELS,
  parseNotificationSettingsUpdate,
  updateNotificationSettings,
  updateVisibleNotificationSettings,
  type NotificationSource,
} from '../../domain/notifications/settings';
import { findVisibleGroup, findVisibleProject } from '../../domain/visibility';
import { authErrorResponses, badRequestResponse, booleanParam, idParams, notFoundResponse } from './schemas';

const levelSchema = { type: 'string', enum: [...NOTIFICATION_LEVELS] } as const;

/** GitLab's GlobalNotificationSetting and NotificationSetting entities (named OpenAPI components). */
export const globalNotificationSettingsSchema = {
  $id: 'GlobalNotificationSettings',
  type: 'object',
  description: "The user's global notification level and e-mail; events only with level custom",
  properties: {
    level: levelSchema,
    events: { $ref: 'NotificationEvents#' },
    notification_email: { type: 'string', description: 'Where e-mails go unless a group names another' },
  },
  // GitLab's order: level, events (custom only), notification_email.
  required: ['level', 'notification_email'],
} as const;

export const groupNotificationSettingsSchema = {
  $id: 'GroupNotificationSettings',
  type: 'object',
  description: "A group's notification level (events only with level custom) and, when set, its own e-mail",
  properties: {
    level: levelSchema,
    events: { $ref: 'NotificationEvents#' },
    notification_email: {
      type: 'string',
      description: 'Only when set: where e-mails about this group, its subgroups and projects go (inherited)',
    },
  },
  required: ['level'],
} as const;

export const notificationSettingsSchema = {
  $id: 'NotificationSettings',
  type: 'object',
  description: "A project's notification level; events only with level custom",
  properties: { level: levelSchema, events: { $ref: 'NotificationEvents#' } },
  required: ['level'],
} as const;

const SETTINGS_VIEWS = {
  global: 'GlobalNotificationSettings#',
  group: 'GroupNotificationSettings#',
  project: 'NotificationSettings#',
} as const;

const settingsView = (kind: NotificationSource['kind']) => ({ $ref: SETTINGS_VIEWS[kind] }) as const;

/**
 * PUT parameters, accepted from the query string, a form body or a JSON body (merged, body wins).
 * `level` is a plain string here so that an unknown level gets GitLab's own message.
 */
const updateParams = (kind: NotificationSource['kind']) =>
  ({
    type: 'object',
    properties: {
      level: { type: 'string', description: `One of ${NOTIFICATION_LEVELS.join(', ')}` },
      ...(kind !== 'project'
        ? {
            notification_email: {
              type: 'string',
              description:
                kind === 'global'
                  ? 'The primary or a verified secondary e-mail of the user'
                  : 'The primary or a verified secondary e-mail of the user, for this group and everything below it (empty: inherit)',
            },
          }
        : {}),
      ...Object.fromEntries(
        NOTIFICATION_EVENTS.map((e) => [e, booleanParam(`Enable/disable the ${e} e-mail (level custom)`)]),
      ),
    },
  }) as const;

const OPERATION_NAMES = {
  global: 'GlobalNotificationSettings',
  group: 'GroupNotificationSettings',
  project: 'ProjectNotificationSettings',
} as const;

export const notificationSettingsRoutes: FastifyPluginAsync<AppContext> = async (app, { db }) => {
  const tags = ['notification_settings'];

  async function sourceOf(request: FastifyRequest, kind: NotificationSource['kind']): Promise<NotificationSource> {
    if (kind === 'global') return { kind };
    const { id } = request.params as { id: string };
    const viewer = principalOf(request).user;
    if (kind === 'group') {
      const group = await findVisibleGroup(db, viewer, id);
      if (!group) throw apiNotFound('Group');
      return { kind, id: group.id };
    }
    const project = await findVisibleProject(db, viewer, id);
    if (!project) throw apiNotFound('Project');
    return { kind, id: project.id };
  }

  const routes = [
    { kind: 'global', url: '/notification_settings', what: 'global' },
    { kind: 'group', url: '/groups/:id/notification_settings', what: 'Group' },
    { kind: 'project', url: '/projects/:id/notification_settings', what: 'Project' },
  ] as const;

  for (const { kind, url, what } of routes) {
    const global = kind === 'global';
    const params = global ? undefined : idParams(kind);
    const notFound = global ? {} : { 404: notFoundResponse(what) };

    app.get(
      url,
      {
        // GET /notification_settings in one round trip: the row comes with the token.
        ...(global ? { config: { withGlobalNotificationSettings: true } } : {}),
        schema: {
          operationId: `get${OPERATION_NAMES[kind]}`,
          summary: global ? 'Global notification settings and e-mail' : `Notification settings of a ${kind}`,
          tags,
          ...(params ? { params } : {}),
          querystring: { type: 'object', properties: {} },
          response: { 200: settingsView(kind), ...authErrorResponses, ...notFound },
        },
      },
      async (request) => {
        const principal = principalOf(request);
        if (kind === 'global') {
          return principal.globalNotificationSettings !== undefined
            ? globalNotificationSettingsView(principal.globalNotificationSettings, principal.user)
            : getNotificationSettings(db, principal.user, { kind });
        }
        // Two round trips: the token, then the visible target with the user's row for it.
        const { id } = request.params as { id: string };
        const view = await getVisibleNotificationSettings(db, principal.user, kind, id);
        if (!view) throw apiNotFound(what);
        return view;
      },
    );

    app.put(
      url,
      {
        schema: {
          operationId: `update${OPERATION_NAMES[kind]}`,
          summary: global
            ? 'Update the global notification settings and e-mail'
            : `Update the notification settings of a ${kind}`,
          tags,
          ...(params ? { params } : {}),
          querystring: updateParams(kind),
          // nullable: a PUT may carry everything in the query string and no body at all.
          body: { ...updateParams(kind), nullable: true },
          response: { 200: settingsView(kind), 400: badRequestResponse, ...authErrorResponses, ...notFound },
        },
      },
      async (request) => {
        const user = principalOf(request).user;
        if (kind === 'project') {
          // Two round trips (authentication, then one upsert into the visible project). Groups keep
          // the general path: their notification_email needs the verified-address read first.
          // On bad parameters the 404 of a missing or hidden one still comes first, as before.
          let update: ReturnType<typeof parseNotificationSettingsUpdate>;
          try {
            update = parseNotificationSettingsUpdate(mergedParams(request), { kind, id: 0 });
          } catch (err) {
            await sourceOf(request, kind);
            throw err;
          }
          const { id } = request.params as { id: string };
          const view = await updateVisibleNotificationSettings(db, user, kind, id, update, apiAuditActor(request));
          if (!view) throw apiNotFound(what);
          return view;
        }
        const source = await sourceOf(request, kind);
        // Everything is validated before anything is written: a rejected request changes nothing.
        const update = parseNotificationSettingsUpdate(mergedParams(request), source);
        return updateNotificationSettings(db, user, source, update, apiAuditActor(request));
      },
    );
  }
};
