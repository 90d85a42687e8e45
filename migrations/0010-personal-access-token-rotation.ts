// Rotation of personal access tokens (GitLab's previous_personal_access_token_id): each token made
// by a rotation points at the token it replaced, so presenting a token revoked by rotation can
// revoke every token rotated from it (the whole chain). Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table personal_access_tokens
      add column previous_personal_access_token_id bigint
        references personal_access_tokens (id) on delete set null;
    create index personal_access_tokens_previous_id on personal_access_tokens (previous_personal_access_token_id)
      where previous_personal_access_token_id is not null;
    create index audit_events_target on audit_events (target_type, target_id);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop index audit_events_target;
    alter table personal_access_tokens drop column previous_personal_access_token_id;
  `.execute(db);
}
