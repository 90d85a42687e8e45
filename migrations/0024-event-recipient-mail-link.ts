// Issue 30: the notification intake links each recipient to their outbox message in the statement
// that queues it (10,000 links for a large project). The foreign key on mail_id checked and locked
// (FOR KEY SHARE) each new outbox row, one by one: 10,000 row locks, written to the WAL, for rows
// the same statement had just inserted — about half of the intake's time. The link's only rule that
// needs the database is "a purged message leaves mail_id null" (it was ON DELETE SET NULL): a
// statement-level trigger on mail_outbox keeps it, once per DELETE statement, for all the rows it
// removed. mail_id is only ever written from the ids that insert returned, so it cannot name a
// message that does not exist.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table notification_event_recipients drop constraint notification_event_recipients_mail_id_fkey;
    create function notification_event_recipients_unlink_mail() returns trigger language plpgsql as $$
    begin
      update notification_event_recipients l set mail_id = null
        from gone where l.mail_id = gone.id;
      return null;
    end $$;
    create trigger mail_outbox_unlink_event_recipients after delete on mail_outbox
      referencing old table as gone for each statement
      execute function notification_event_recipients_unlink_mail();
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop trigger mail_outbox_unlink_event_recipients on mail_outbox;
    drop function notification_event_recipients_unlink_mail();
    update notification_event_recipients l set mail_id = null
     where mail_id is not null and not exists (select 1 from mail_outbox m where m.id = l.mail_id);
    alter table notification_event_recipients add constraint notification_event_recipients_mail_id_fkey
      foreign key (mail_id) references mail_outbox (id) on delete set null;
  `.execute(db);
}
