// Issue 30: the sender's claim asks for due pending messages OR lapsed claims ('sending' past their
// lease), in next_attempt_at order. Each half had its own partial index, and no single index served
// the OR in that order, so PostgreSQL read the whole table and sorted it at every claim (every page
// of every sent message kept for MAIL_RETENTION_DAYS, for a batch of 32). One index over the
// messages still to do, in claim order, serves both halves: a lapsed claim was due when it was
// claimed (a claim never moves next_attempt_at), so the claim walks this index from its start,
// skips what is in flight, and stops at its limit.
// The retention purge's index (status, updated_at) took a new entry at every update of every
// message (a claim, a sent); it becomes partial, over finished messages only (what the purge
// reads), so a claim no longer writes it. `mail list --status` reads the primary key backwards.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create index mail_outbox_queue on mail_outbox (next_attempt_at, id) where status in ('pending', 'sending');
    drop index mail_outbox_due;
    drop index mail_outbox_lapsed;
    create index mail_outbox_finished on mail_outbox (updated_at) where status in ('sent', 'failed');
    drop index mail_outbox_status_updated;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create index mail_outbox_due on mail_outbox (next_attempt_at, id) where status = 'pending';
    create index mail_outbox_lapsed on mail_outbox (locked_until) where status = 'sending';
    drop index mail_outbox_queue;
    create index mail_outbox_status_updated on mail_outbox (status, updated_at);
    drop index mail_outbox_finished;
  `.execute(db);
}
