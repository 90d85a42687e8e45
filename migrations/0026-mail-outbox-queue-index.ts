// Issue 30: the sender's claim asks for due pending messages OR lapsed claims ('sending' past their
// lease), in next_attempt_at order. Each half had its own partial index, and no single index served
// the OR in that order, so PostgreSQL read the whole table and sorted it at every claim (every page
// of every sent message kept for MAIL_RETENTION_DAYS, for a batch of 32). One index over the
// messages still to do, in claim order, serves both halves: a lapsed claim was due when it was
// claimed (a claim never moves next_attempt_at), so the claim walks this index from its start,
// skips what is in flight, and stops at its limit.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create index mail_outbox_queue on mail_outbox (next_attempt_at, id) where status in ('pending', 'sending');
    drop index mail_outbox_due;
    drop index mail_outbox_lapsed;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create index mail_outbox_due on mail_outbox (next_attempt_at, id) where status = 'pending';
    create index mail_outbox_lapsed on mail_outbox (locked_until) where status = 'sending';
    drop index mail_outbox_queue;
  `.execute(db);
}
