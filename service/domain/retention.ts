// Retention: what expired data is deleted, when, and how (in batches). One rule per kind of row;
// `npm start`'s timer, `lanyard-admin db prune` and the deployed schedule all run pruneExpiredData.
//
// The rules (GRACE = graceSeconds, default 7 days):
// - web sessions: once expired (signed-in or anonymous, nothing reads them afterwards); ended through
//   endSessions, so the applications of an expired session get back-channel logout tokens.
//   (Used codes outlive the sessions they name: a code expires after its session began, and stays
//   GRACE longer, which must not be shorter than a session's week.)
// - authorization codes: an unused one once expired; a used one GRACE after it expired, so that a
//   replayed code is still recognised as a replay and revokes what it issued (RFC 6749 §4.1.2)
//   for a week after its 600 s life. Later, a replay is refused as an unknown code.
// - OAuth tokens (one row = an access token and the refresh token issued with it): a row goes when
//   its access token expired more than GRACE ago AND its refresh token is dead for more than GRACE
//   (none issued, rotated or revoked more than GRACE ago). A live refresh token never expires
//   (contract §2), so its row stays. Keeping rotated and revoked rows for GRACE is what keeps
//   replay detection working (RFC 9700 §4.14.2): the legitimate client that comes back within a
//   week with a refresh token someone else already rotated is recognised, and the thief's
//   descendants are revoked; a revoked token keeps answering "Token was revoked" rather than an
//   anonymous 401 for as long. The first row of a refresh chain (family_id null, which its members
//   point to with ON DELETE CASCADE) goes only with the last of its family.
// - DPoP proof jtis: once their proof's iat window has passed (a replay is refused by its iat then).
// - rate-limit counters: an hour after their window opened (every window is shorter: 60 s today).
// - audit events: kept forever unless auditRetentionDays is set (docs/operations.md, "Retention").
// - back-channel logout deliveries: as mail.
// - dynamically registered applications (RFC 7591): once unused for 30 days — registered that long
//   ago, and no code, device code or token issued to them since (a refresh issues a token, so a
//   client in use stays). Their codes and tokens go with them (cascade).
// - notification events (and their recipient links, by cascade): mailRetentionDays after they were
//   posted, once none of their messages is still to send. Their idempotency keys go with them: a
//   caller that retries a month later posts a new event.
// - mail: sent and failed messages mailRetentionDays (default 30) after they were settled; pending
//   and in-flight messages are never pruned.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';
import { recordAudit } from './audit';
import { endSessions } from './backchannel-logout';

export const DEFAULT_BATCH_SIZE = 1000;
export const DEFAULT_GRACE_SECONDS = 7 * 24 * 3600;
export const DEFAULT_MAIL_RETENTION_DAYS = 30;
const RATE_LIMIT_ROW_SECONDS = 3600;
/** Unused this long (no code, no token issued), a dynamically registered application is pruned. */
export const DYNAMIC_CLIENT_IDLE_DAYS = 30;

export interface PruneOptions {
  /** Count what would be deleted; delete nothing. */
  dryRun?: boolean;
  /** Rows per DELETE statement (each its own short transaction when db is not a transaction). */
  batchSize?: number;
  graceSeconds?: number;
  /** Delete audit events older than this many days; undefined keeps them forever. */
  auditRetentionDays?: number;
  /** Delete sent and failed mail settled more than this many days ago (MAIL_RETENTION_DAYS; default 30). */
  mailRetentionDays?: number;
  /** Recorded in the audit event of a run that deleted rows (a run that deleted nothing leaves none). */
  actor?: string;
  /** Called after each statement: progress for the operator. */
  onBatch?: (progress: PruneProgress) => void;
}

export interface PruneProgress {
  table: string;
  /** Which rule of the table (tokens have two). */
  rule: string;
  /** Rows deleted (or, in a dry run, counted) by this statement. */
  rows: number;
  /** Rows of this table so far in this run. */
  tableTotal: number;
  batch: number;
}

export interface PruneReport {
  dryRun: boolean;
  /** Rows deleted (or that would be) per table, every table listed. */
  deleted: Record<string, number>;
  total: number;
}

interface Settings {
  grace: number;
  auditRetentionDays?: number;
  mailRetentionDays: number;
}

/** One kind of expired row: its table, primary key and the condition on alias `t`. */
interface PurgeRule {
  table: string;
  rule: string;
  key: string;
  /** undefined: the rule is off with these settings (audit events kept forever). */
  expired(s: Settings): RawBuilder<unknown> | undefined;
  /** Delete one batch another way than a plain DELETE (sessions end through endSessions). */
  purge?(db: DbOrTrx, batch: RawBuilder<unknown>): Promise<number>;
}

const ago = (seconds: number) => sql`now() - make_interval(secs => ${seconds})`;

/** A token row (alias `a`) nobody can use or replay any more, and not for GRACE. */
function deadToken(a: string, grace: number): RawBuilder<unknown> {
  const c = (column: string) => sql.ref(`${a}.${column}`);
  return sql`(${c('expires_at')} < ${ago(grace)}
    and (${c('revoked_at')} is null or ${c('revoked_at')} < ${ago(grace)})
    and (${c('refresh_token_digest')} is null
      or ${c('revoked_at')} is not null
      or (${c('refreshed_at')} is not null and ${c('refreshed_at')} < ${ago(grace)})))`;
}

/** In the order they run: tokens before the codes they point to (fewer ON DELETE SET NULL updates). */
export const PURGE_RULES: readonly PurgeRule[] = [
  {
    table: 'web_sessions',
    rule: 'expired',
    key: 'id_digest',
    expired: () => sql`t.expires_at <= now()`,
    purge: (db, batch) => endSessions(db, sql`s.id_digest in (${batch})`, 'expired'),
  },
  {
    table: 'oauth_access_tokens',
    rule: 'rotated or revoked, expired',
    key: 'id',
    expired: (s) => sql`t.family_id is not null and ${deadToken('t', s.grace)}`,
  },
  {
    table: 'oauth_access_tokens',
    rule: 'whole family dead',
    key: 'id',
    expired: (s) => sql`t.family_id is null and ${deadToken('t', s.grace)} and not exists (
      select 1 from oauth_access_tokens m where m.family_id = t.id and not ${deadToken('m', s.grace)})`,
  },
  {
    table: 'oauth_authorization_codes',
    rule: 'expired, or used and past the replay grace',
    key: 'id',
    expired: (s) => sql`(t.used_at is null and t.expires_at <= now()) or t.expires_at < ${ago(s.grace)}`,
  },
  {
    // Past the grace a polling device gets invalid_grant instead of expired_token: it stopped long ago.
    table: 'oauth_device_grants',
    rule: 'expired, past the grace',
    key: 'id',
    expired: (s) => sql`t.expires_at < ${ago(s.grace)}`,
  },
  {
    // RFC 9449 §11.1: a proof's jti is kept only while the proof could be accepted.
    table: 'dpop_proofs',
    rule: 'past the proof window',
    key: 'digest',
    expired: () => sql`t.expires_at < now()`,
  },
  {
    table: 'rate_limit_counters',
    rule: 'window over',
    key: 'key',
    expired: () => sql`t.window_start < ${ago(RATE_LIMIT_ROW_SECONDS)}`,
  },
  {
    table: 'audit_events',
    rule: 'older than the audit retention',
    key: 'id',
    expired: (s) =>
      s.auditRetentionDays === undefined
        ? undefined
        : sql`t.created_at < now() - make_interval(days => ${s.auditRetentionDays})`,
  },
  {
    table: 'backchannel_logout_deliveries',
    rule: 'sent or failed, past the mail retention',
    key: 'id',
    expired: (s) =>
      sql`t.status in ('sent', 'failed') and t.updated_at < now() - make_interval(days => ${s.mailRetentionDays})`,
  },
  {
    table: 'oauth_applications',
    rule: 'dynamically registered, unused for 30 days',
    key: 'id',
    expired: () => {
      const idle = sql`now() - make_interval(days => ${DYNAMIC_CLIENT_IDLE_DAYS})`;
      return sql`t.dynamically_registered and t.created_at < ${idle}
        and not exists (select from oauth_access_tokens a where a.application_id = t.id and a.created_at >= ${idle})
        and not exists (select from oauth_authorization_codes c where c.application_id = t.id and c.created_at >= ${idle})
        and not exists (select from oauth_device_grants d where d.application_id = t.id and d.created_at >= ${idle})`;
    },
  },
  {
    // Before the mail they link to, so the mail purge has no links to set null.
    table: 'notification_events',
    rule: 'past the mail retention, nothing left to send',
    key: 'id',
    expired: (s) => sql`t.created_at < now() - make_interval(days => ${s.mailRetentionDays})
      and not exists (select from notification_event_recipients r join mail_outbox m on m.id = r.mail_id
                       where r.event_id = t.id and m.status in ('pending', 'sending'))`,
  },
  {
    table: 'mail_outbox',
    rule: 'sent or failed, past the mail retention',
    key: 'id',
    // finished_at: updated_at once sent or failed, null before (migration 0031; its index).
    expired: (s) => sql`t.finished_at < now() - make_interval(days => ${s.mailRetentionDays})`,
  },
];

/** Delete (or count) every expired row, rule by rule, `batchSize` rows per statement. */
export async function pruneExpiredData(db: DbOrTrx, options: PruneOptions = {}): Promise<PruneReport> {
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError('batchSize must be a positive integer');
  const settings: Settings = {
    grace: options.graceSeconds ?? DEFAULT_GRACE_SECONDS,
    auditRetentionDays: options.auditRetentionDays,
    mailRetentionDays: options.mailRetentionDays ?? DEFAULT_MAIL_RETENTION_DAYS,
  };
  const dryRun = options.dryRun ?? false;
  const deleted: Record<string, number> = {};
  for (const rule of PURGE_RULES) {
    deleted[rule.table] ??= 0;
    const condition = rule.expired(settings);
    if (!condition) continue;
    const table = sql.table(rule.table);
    const key = sql.ref(rule.key);
    if (dryRun) {
      const { rows } = await sql<{ n: string }>`select count(*) as n from ${table} t where ${condition}`.execute(db);
      const n = Number(rows[0].n);
      deleted[rule.table] += n;
      options.onBatch?.({ table: rule.table, rule: rule.rule, rows: n, tableTotal: deleted[rule.table], batch: 1 });
      continue;
    }
    for (let batch = 1; ; batch++) {
      // SKIP LOCKED: a row a request holds (a refresh in flight) is left for the next run, and the
      // request is never blocked by the purge. FOR UPDATE re-checks the condition on the row's
      // latest version, so a row made live again meanwhile is not deleted.
      const batchKeys = sql`select t.${key} from ${table} t where ${condition} limit ${batchSize} for update skip locked`;
      const n = rule.purge
        ? await rule.purge(db, batchKeys)
        : Number((await sql`delete from ${table} where ${key} in (${batchKeys})`.execute(db)).numAffectedRows ?? 0);
      deleted[rule.table] += n;
      options.onBatch?.({ table: rule.table, rule: rule.rule, rows: n, tableTotal: deleted[rule.table], batch });
      if (n < batchSize) break;
    }
  }
  const total = Object.values(deleted).reduce((a, b) => a + b, 0);
  if (!dryRun && total > 0 && options.actor) {
    await recordAudit(db, { actor: options.actor, action: 'db.prune', details: { deleted } });
  }
  return { dryRun, deleted, total };
}
