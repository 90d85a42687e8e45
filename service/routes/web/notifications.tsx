// /-/profile/notifications: the global level and notification e-mail, and each group's and
// project's own level next to the level that really applies and where it comes from (the
// project, which ancestor group, or global; gitlab#222840).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import type { NotificationLevel } from '../../db/schema';
import { DomainError } from '../../domain/errors';
import type { Page } from '../../domain/page';
import {
  getNotificationSettings,
  NOTIFICATION_LEVELS,
  type NotificationSettingsUpdate,
  type NotificationSource,
  updateNotificationSettingsAudited,
} from '../../domain/notifications/settings';
import { listNotificationTargets, type NotificationTarget } from '../../domain/notifications/targets';
import { verifiedEmails } from '../../domain/users';
import { findVisibleGroup, findVisibleProject } from '../../domain/visibility';
import { formRouteOptions } from '../../http/form-body';
import { stringParam } from '../../shared/params';
import { Button, CsrfField, type FieldError, type Flash, Select } from '../../pages/components';
import * as React from '../../pages/jsx';
import { Layout, sendPage } from '../../pages/layout';
import { pageNumberOf, pageWindow, Pagination } from '../../pages/pagination';
import { type AccountRequest, accountGuardFor, auditActor, pendingFlash, redirectWithFlash } from './account';

const BASE = '/-/profile/notifications';
const GLOBAL_FORM = formRouteOptions({ strings: ['level', 'notification_email'] });
const idParams = {
  params: {
    type: 'object',
    properties: {
      kind: { type: 'string', enum: ['groups', 'projects'] },
      id: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' },
    },
    required: ['kind', 'id'],
  },
} as const;
const TARGET_FORM = formRouteOptions({ strings: ['level'] }, idParams);

/** The groups list's page (`page`) and the projects list's (`project_page`, as GitLab's). */
type ListPages = { page: number; project_page: number };

const LEVEL_LABELS: Record<NotificationLevel, string> = {
  global: 'Global',
  watch: 'Watch',
  participating: 'Participate',
  mention: 'On mention',
  disabled: 'Disabled',
  custom: 'Custom',
};
const levelOptions = (withGlobal: boolean) =>
  NOTIFICATION_LEVELS.filter((l) => withGlobal || l !== 'global').map((l) => ({ value: l, label: LEVEL_LABELS[l] }));

function Source({ target }: { target: NotificationTarget }): React.Html {
  if (target.from.kind === 'self') return <>set here</>;
  if (target.from.kind === 'group')
    return (
      <>
        from group <code>{target.from.fullPath}</code>
      </>
    );
  return <>from your global setting</>;
}

export async function notificationRoutes(app: FastifyInstance, context: AppContext) {
  const { db } = context;
  const guard = accountGuardFor(app, context);

  async function page(
    reply: FastifyReply,
    r: AccountRequest,
    opts: { status?: number; errors?: FieldError[]; flash?: Flash; pages?: ListPages } = {},
  ) {
    const pending = opts.flash ? { flash: opts.flash } : await pendingFlash(app, r.session, BASE);
    const global = await getNotificationSettings(db, r.user, { kind: 'global' });
    const emails = await verifiedEmails(db, r.user);
    const pages = opts.pages ?? { page: 1, project_page: 1 };
    const { groups, projects } = await listNotificationTargets(db, r.user, {
      groups: pageWindow(pages.page),
      projects: pageWindow(pages.project_page),
    });
    const err = (field: string) => opts.errors?.find((e) => e.field === field)?.message;
    const Targets = ({
      title,
      id,
      items,
      param,
    }: {
      title: string;
      id: string;
      items: Page<NotificationTarget>;
      param: keyof ListPages;
    }) => (
      <>
        <h2 id={id}>
          {title} ({items.total})
        </h2>
        {items.total === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <table class="list" id={`${id}-table`} aria-labelledby={id}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Applies</th>
                <th scope="col">Own level</th>
              </tr>
            </thead>
            <tbody>
              {items.rows.map((t) => (
                <tr data-path={t.fullPath}>
                  <td data-label="Name">
                    <strong>{t.name}</strong>
                    <br />
                    <span class="muted">{t.fullPath}</span>
                  </td>
                  <td data-label="Applies" class="effective">
                    <strong>{LEVEL_LABELS[t.effective]}</strong>{' '}
                    <span class="muted">
                      <Source target={t} />
                    </span>
                  </td>
                  <td data-label="Own level">
                    <form method="post" action={`${BASE}/${t.kind}s/${t.id}`} class="inline-form">
                      <CsrfField token={r.csrf} />
                      <label class="visually-hidden" for={`level-${t.kind}-${t.id}`}>
                        Notification level of {t.fullPath}
                      </label>
                      {err(`level-${t.kind}-${t.id}`) ? (
                        <span class="field-error" id={`level-${t.kind}-${t.id}-error`}>
                          <span class="visually-hidden">Error: </span>
                          {err(`level-${t.kind}-${t.id}`)}
                        </span>
                      ) : null}
                      <select
                        id={`level-${t.kind}-${t.id}`}
                        name="level"
                        aria-invalid={err(`level-${t.kind}-${t.id}`) ? 'true' : undefined}
                        aria-describedby={err(`level-${t.kind}-${t.id}`) ? `level-${t.kind}-${t.id}-error` : undefined}
                      >
                        {levelOptions(true).map((o) => (
                          <option value={o.value} selected={o.value === t.level}>
                            {o.label}
                          </option>
                        ))}
                      </select>{' '}
                      <Button variant="secondary" small>
                        Save
                      </Button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Pagination
          path={BASE}
          page={pages[param]}
          total={items.total}
          label={`${title} pages`}
          param={param}
          keep={pages}
        />
      </>
    );
    return sendPage(
      reply,
      opts.status ?? 200,
      <Layout
        title="Notifications"
        user={r.user}
        csrf={r.csrf}
        section={BASE}
        flash={pending.flash}
        errors={opts.errors}
        lead="Choose how much e-mail you get. A group or project set to Global follows its parent group, then your global setting."
      >
        <section class="panel" aria-labelledby="global-title">
          <h2 id="global-title">Global notification settings</h2>
          <form method="post" action={BASE}>
            <CsrfField token={r.csrf} />
            <Select
              id="notification_email"
              name="notification_email"
              label="Notification e-mail"
              options={emails.map((e) => ({ value: e, label: e }))}
              value={global.notification_email}
              error={err('notification_email')}
            />
            <Select
              id="global_level"
              name="level"
              label="Global notification level"
              hint="Applies wherever a group or project has no level of its own."
              options={levelOptions(false)}
              value={global.level}
              error={err('global_level')}
            />
            <div class="actions">
              <Button>Save changes</Button>
            </div>
          </form>
        </section>
        <Targets title="Groups" id="groups" items={groups} param="page" />
        <Targets title="Projects" id="projects" items={projects} param="project_page" />
      </Layout>,
    );
  }

  const save = (
    request: FastifyRequest,
    r: AccountRequest,
    source: NotificationSource,
    update: NotificationSettingsUpdate,
  ) => updateNotificationSettingsAudited(db, r.user, source, update, auditActor(r.user, request));

  app.get(BASE, async (request, reply) => {
    const r = await guard(request, reply);
    return r
      ? page(reply, r, {
          pages: { page: pageNumberOf(request.query), project_page: pageNumberOf(request.query, 'project_page') },
        })
      : reply;
  });

  app.post(BASE, GLOBAL_FORM, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const level = stringParam(body, 'level') ?? '';
    const email = stringParam(body, 'notification_email');
    if (level === 'global' || !(NOTIFICATION_LEVELS as readonly string[]).includes(level))
      return page(reply, r, {
        status: 422,
        errors: [{ field: 'global_level', message: 'Select a notification level' }],
      });
    try {
      await save(
        request,
        r,
        { kind: 'global' },
        {
          level: level as NotificationLevel,
          ...(email !== undefined ? { notificationEmail: email.trim() || null } : {}),
          events: {},
        },
      );
    } catch (err) {
      // The domain error names its field: the e-mail is the only one this form can get wrong there.
      if (err instanceof DomainError && err.details?.notification_email)
        return page(reply, r, {
          status: 422,
          errors: [
            {
              field: 'notification_email',
              message: 'Select a notification e-mail from your confirmed e-mail addresses',
            },
          ],
        });
      throw err;
    }
    return redirectWithFlash(app, reply, r.session, BASE, { notice: 'Notification settings saved.' });
  });

  app.post<{ Params: { kind: 'groups' | 'projects'; id: string } }>(
    `${BASE}/:kind/:id`,
    TARGET_FORM,
    async (request, reply) => {
      const r = await guard(request, reply);
      if (!r) return reply;
      const id = Number(request.params.id);
      const kind = request.params.kind === 'groups' ? 'group' : 'project';
      const visible =
        kind === 'group'
          ? (await findVisibleGroup(db, r.user, String(id)))?.full_path
          : (await findVisibleProject(db, r.user, String(id)))?.path_with_namespace;
      if (!visible) return page(reply, r, { status: 404, flash: { alert: `That ${kind} was not found.` } });
      const level = stringParam((request.body ?? {}) as Record<string, unknown>, 'level') ?? '';
      if (!(NOTIFICATION_LEVELS as readonly string[]).includes(level))
        return page(reply, r, {
          status: 422,
          errors: [{ field: `level-${kind}-${id}`, message: `Select a notification level for ${visible}` }],
        });
      await save(request, r, { kind, id }, { level: level as NotificationLevel, events: {} });
      return redirectWithFlash(app, reply, r.session, BASE, {
        notice: `Notification level of ${visible} set to ${LEVEL_LABELS[level as NotificationLevel]}.`,
      });
    },
  );
}
