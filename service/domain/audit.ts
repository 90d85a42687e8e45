// Audit events: who did what to what, when — recorded by every change (page, CLI, API alike) and
// read back in GitLab's instance audit event shape (GET /api/v4/audit_events). Never pass a secret
// in `details`.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';
import { invalid } from './errors';
import { windowPage } from './page';

export interface AuditEntry {
  actor: string;
  action: string;
  targetType?: string;
  targetId?: string | number;
  details?: Record<string, unknown>;
  ipAddress?: string;
}

/** Who made a change and from where (`user:<username>`, `cli:<os user>`, `system`). */
export interface AuditActor {
  actor: string;
  ipAddress?: string;
}

export async function recordAudit(db: DbOrTrx, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('audit_events')
    .values({
      actor: entry.actor,
      action: entry.action,
      target_type: entry.targetType ?? null,
      target_id: entry.targetId === undefined ? null : String(entry.targetId),
      details: JSON.stringify(entry.details ?? {}),
      ip_address: entry.ipAddress ?? null,
    })
    .execute();
}

/**
 * recordAudit as SQL over the rows of the CTE `from` (one event per row; `targetId` is SQL over
 * that row): for a change written as one statement, so its audit event rides on the same round
 * trip and commits or fails with it.
 */
export function auditInsertFrom(
  from: string,
  entry: Omit<AuditEntry, 'targetId' | 'details'> & {
    targetId: RawBuilder<unknown>;
    /** Fixed details, or SQL (jsonb) over the row. */
    details?: Record<string, unknown> | RawBuilder<unknown>;
  },
): RawBuilder<unknown> {
  const details =
    entry.details && 'toOperationNode' in entry.details
      ? (entry.details as RawBuilder<unknown>)
      : sql`${JSON.stringify(entry.details ?? {})}::jsonb`;
  return sql`insert into audit_events (actor, action, target_type, target_id, details, ip_address)
    select ${entry.actor}, ${entry.action}, ${entry.targetType ?? null}, (${entry.targetId})::text,
      ${details}, ${entry.ipAddress ?? null}
    from ${sql.table(from)}`;
}

// ---------------------------------------------------------------------------------------------
// Reading the trail in GitLab's shape. GitLab's entity is the User, Group or Project a change is
// about (a token's entity is its owner); anything else (applications, service keys) belongs to the
// instance (Gitlab::Audit::InstanceScope, id 1). The author is the user named by a `user:` actor;
// the CLI and the service itself have no user (GitLab's author_id -1, named in author_name).

export const AUDIT_ENTITY_TYPES = ['User', 'Group', 'Project', 'Gitlab::Audit::InstanceScope'] as const;
export type AuditEntityType = (typeof AUDIT_ENTITY_TYPES)[number];

export interface AuditEventRow {
  id: number;
  actor: string;
  action: string;
  target_type: string | null;
  target_id: string | null;
  details: Record<string, unknown>;
  ip_address: string | null;
  created_at: Date;
  author_id: number;
  author_name: string;
  author_email: string | null;
  entity_type: AuditEntityType;
  entity_id: number;
  entity_path: string;
  target_details: string | null;
}

const mapped = sql`
  select e.id, e.actor, e.action, e.target_type, e.target_id, e.details, e.ip_address, e.created_at,
    coalesce(au.id, -1) as author_id,
    coalesce(au.name, e.actor) as author_name,
    au.email as author_email,
    case
      when e.target_type = 'user' and tu.id is not null then 'User'
      when e.target_type = 'group' and g.id is not null then 'Group'
      when e.target_type = 'project' and p.id is not null then 'Project'
      when e.target_type = 'personal_access_token' and pu.id is not null then 'User'
      else 'Gitlab::Audit::InstanceScope'
    end as entity_type,
    case
      when e.target_type = 'user' and tu.id is not null then tu.id
      when e.target_type = 'group' and g.id is not null then g.id
      when e.target_type = 'project' and p.id is not null then p.id
      when e.target_type = 'personal_access_token' and pu.id is not null then pu.id
      else 1
    end as entity_id,
    case
      when e.target_type = 'user' and tu.id is not null then tu.username
      when e.target_type = 'group' and g.id is not null then g.full_path
      when e.target_type = 'project' and p.id is not null then p.path_with_namespace
      when e.target_type = 'personal_access_token' and pu.id is not null then pu.username
      else 'gitlab_instance'
    end as entity_path,
    coalesce(tu.username, g.full_path, p.path_with_namespace, pt.name, e.target_id) as target_details
  from audit_events e
  left join users au on e.actor like 'user:%' and lower(au.username) = lower(substr(e.actor, 6))
  left join users tu on e.target_type = 'user' and e.target_id ~ '^[0-9]{1,18}$' and tu.id = e.target_id::bigint
  left join groups g on e.target_type = 'group' and e.target_id ~ '^[0-9]{1,18}$' and g.id = e.target_id::bigint
  left join projects p on e.target_type = 'project' and e.target_id ~ '^[0-9]{1,18}$' and p.id = e.target_id::bigint
  left join personal_access_tokens pt
    on e.target_type = 'personal_access_token' and e.target_id ~ '^[0-9]{1,18}$' and pt.id = e.target_id::bigint
  left join users pu on pu.id = pt.user_id`;

const VIEW_COLUMNS = sql.raw(
  [
    'id',
    'actor',
    'action',
    'target_type',
    'target_id',
    'details',
    'ip_address',
    'created_at',
    'author_id',
    'author_name',
    'author_email',
    'entity_type',
    'entity_id',
    'entity_path',
    'target_details',
  ]
    .map((c) => `v.${c}`)
    .join(', '),
);

export interface AuditEventFilter {
  createdAfter?: Date;
  createdBefore?: Date;
  entityType?: AuditEntityType;
  entityId?: number;
  limit: number;
  offset: number;
}

/** One page of the trail, newest first, with the total. */
export async function listAuditEvents(
  db: DbOrTrx,
  filter: AuditEventFilter,
): Promise<{ total: number; rows: AuditEventRow[] }> {
  const where = sql.join(
    [
      sql`true`,
      ...(filter.createdAfter ? [sql`v.created_at >= ${filter.createdAfter}`] : []),
      ...(filter.createdBefore ? [sql`v.created_at <= ${filter.createdBefore}`] : []),
      ...(filter.entityType ? [sql`v.entity_type = ${filter.entityType}`] : []),
      ...(filter.entityId !== undefined ? [sql`v.entity_id = ${filter.entityId}`] : []),
    ],
    sql` and `,
  );
  const { rows } = await sql<AuditEventRow & { total: string }>`
    select ${VIEW_COLUMNS}, count(*) over () as total from (${mapped}) v where ${where}
    order by v.id desc limit ${filter.limit} offset ${filter.offset}
  `.execute(db);
  const page = await windowPage(
    rows,
    async () =>
      (await sql<{ n: string }>`select count(*) as n from (${mapped}) v where ${where}`.execute(db)).rows[0]?.n ?? 0,
  );
  return { total: page.total, rows: page.rows.map(normalise) };
}

export async function findAuditEvent(db: DbOrTrx, id: number): Promise<AuditEventRow | undefined> {
  if (!Number.isSafeInteger(id)) return undefined;
  const { rows } = await sql<AuditEventRow>`select ${VIEW_COLUMNS} from (${mapped}) v where v.id = ${id}`.execute(db);
  return rows[0] ? normalise(rows[0]) : undefined;
}

/** bigint columns arrive as strings from a raw query: numbers, as the typed builder returns them. */
const normalise = (row: AuditEventRow): AuditEventRow => ({
  ...row,
  id: Number(row.id),
  author_id: Number(row.author_id),
  entity_id: Number(row.entity_id),
});

export interface AuditFilter {
  actor?: string;
  /** An exact action (`user.block`) or a prefix ending in a dot (`user.`). */
  action?: string;
  targetType?: string;
  targetId?: string;
  /** Only events at or after / before this instant. */
  since?: Date;
  until?: Date;
  /** 1-based page of `perPage` events, newest first. */
  page: number;
  perPage: number;
}

export const AUDIT_MAX_PER_PAGE = 100;

/**
 * The CLI's `audit list`: the trail as stored (actor, action, target), newest first, one page at a
 * time; `total` counts every match. The API's GitLab-shaped view is listAuditEvents above.
 */
export async function listAuditTrail(db: DbOrTrx, filter: AuditFilter) {
  if (!Number.isInteger(filter.page) || filter.page < 1) throw invalid(`page ${filter.page} is invalid (1 or more)`);
  if (!Number.isInteger(filter.perPage) || filter.perPage < 1 || filter.perPage > AUDIT_MAX_PER_PAGE)
    throw invalid(`per-page ${filter.perPage} is invalid (1 to ${AUDIT_MAX_PER_PAGE})`);
  for (const [name, at] of [
    ['since', filter.since],
    ['until', filter.until],
  ] as const)
    if (at && Number.isNaN(at.getTime())) throw invalid(`${name} is not a date (YYYY-MM-DD or an ISO 8601 time)`);
  let q = db.selectFrom('audit_events');
  if (filter.actor !== undefined) q = q.where('actor', '=', filter.actor);
  if (filter.action !== undefined)
    q = filter.action.endsWith('.')
      ? q.where('action', 'like', `${filter.action.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)
      : q.where('action', '=', filter.action);
  if (filter.targetType !== undefined) q = q.where('target_type', '=', filter.targetType);
  if (filter.targetId !== undefined) q = q.where('target_id', '=', filter.targetId);
  if (filter.since) q = q.where('created_at', '>=', filter.since);
  if (filter.until) q = q.where('created_at', '<', filter.until);
  const { total } = await q.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow();
  const rows = await q
    .select(['id', 'actor', 'action', 'target_type', 'target_id', 'details', 'ip_address', 'created_at'])
    .orderBy('id', 'desc')
    .limit(filter.perPage)
    .offset((filter.page - 1) * filter.perPage)
    .execute();
  return {
    total: Number(total),
    events: rows.map((r) => ({ ...r, created_at: r.created_at.toISOString() })),
  };
}
