// Audit events: who did what to what, when. Never pass a secret in `details`.
import type { DbOrTrx } from '../db/schema';

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
