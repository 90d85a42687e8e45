// Audit events: who did what to what, when. Never pass a secret in `details`.
import type { DbOrTrx } from '../db/schema';
import { invalid } from './errors';

export interface AuditEntry {
  actor: string;
  action: string;
  targetType?: string;
  targetId?: string | number;
  details?: Record<string, unknown>;
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

/** Audit events, newest first, one page at a time; `total` counts every match for paging. */
export async function listAuditEvents(db: DbOrTrx, filter: AuditFilter) {
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
