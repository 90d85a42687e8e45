// `users set-2fa U on --require-enrolment` (issue 28): the person enrols a TOTP authenticator at
// their next sign-in, after the password and before anything else. Cleared by the enrolment itself.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table users add column otp_enrolment_required boolean not null default false`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table users drop column otp_enrolment_required`.execute(db);
}
