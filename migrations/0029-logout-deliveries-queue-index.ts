// The back-channel logout sender's claim has the shape migration 0025 fixed for mail: due pending
// deliveries OR lapsed claims, in next_attempt_at order, which no single index served in that
// order, so each claim read and sorted every delivery kept for MAIL_RETENTION_DAYS. The same cure:
// one index over the deliveries still to do, in claim order (a claim never moves
// next_attempt_at), and the retention purge's index partial over finished deliveries only, so a
// claim or a sent record no longer writes it.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create index backchannel_logout_deliveries_queue on backchannel_logout_deliveries (next_attempt_at, id)
      where status in ('pending', 'sending');
    drop index backchannel_logout_deliveries_due;
    drop index backchannel_logout_deliveries_lapsed;
    create index backchannel_logout_deliveries_finished on backchannel_logout_deliveries (updated_at)
      where status in ('sent', 'failed');
    drop index backchannel_logout_deliveries_status_updated;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create index backchannel_logout_deliveries_due on backchannel_logout_deliveries (next_attempt_at, id)
      where status = 'pending';
    create index backchannel_logout_deliveries_lapsed on backchannel_logout_deliveries (locked_until)
      where status = 'sending';
    drop index backchannel_logout_deliveries_queue;
    create index backchannel_logout_deliveries_status_updated on backchannel_logout_deliveries (status, updated_at);
    drop index backchannel_logout_deliveries_finished;
  `.execute(db);
}
