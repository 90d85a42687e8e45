// `notify explain`: why one user is or is not notified of an event — each step of the decision,
// in the order the rules apply, and the engine's own answer. The facts come from the same SQL
// pieces the engine uses (the ancestor walk, the holders, the visibility predicate, the effective
// settings); the level step is narrated with levels.ts's levelAllows, generated from the same
// table as the engine's SQL condition.
import { sql } from 'kysely';
import type { DbOrTrx, NotificationLevel, User } from '../../db/schema';
import { visibleSql } from '../visibility';
import { settingsAtSourcesSql } from './sources';
import { effectiveSettings, type SettingSource, targetSourcesCte } from './effective';
import { type CandidateKind, flagOn, INHERIT, levelAllows } from './levels';
import { holdersCte } from './subscriptions';
import { type Recipient, type RecipientTarget, type RecipientsRequest, resolveRecipients } from './recipients';

/** One step of `notify explain`: what was looked at and what it decided. */
interface ExplainStep {
  step: string;
  detail: string;
}

const describeSource = (s: Pick<SettingSource, 'type' | 'full_path'>) =>
  s.type === 'global' ? 'global' : `${s.type} ${s.full_path}`;

interface Facts {
  visible: boolean;
  chain: {
    source_type: SettingSource['type'];
    full_path: string | null;
    level: NotificationLevel;
    notification_email: string | null;
  }[];
  holds: {
    source_type: SettingSource['type'];
    full_path: string;
    level_there: NotificationLevel | null;
    global_level: NotificationLevel;
  }[];
}

/** What the engine reads about one user on the target, in one statement. */
async function factsOf(db: DbOrTrx, target: RecipientTarget, userId: number): Promise<Facts> {
  const ns =
    target.kind === 'project'
      ? { visibility: sql`p.visibility`, groupId: sql`p.group_id`, projectId: sql`p.id` }
      : { visibility: sql`p.visibility`, groupId: sql`p.id` };
  const table = target.kind === 'project' ? sql`projects` : sql`groups`;
  const targetId = target.kind === 'project' ? target.project.id : target.group.id;
  const { rows } = await sql<Facts>`
    with recursive ${targetSourcesCte(target)}, ${holdersCte()},
    chain as (
      select a.source_type, a.full_path, a.depth, a.level, a.notification_email
        from (${settingsAtSourcesSql(sql`select ${userId}::bigint`)}) a
      union all
      select 'global', null, 1000000, level, notification_email from notification_settings
       where user_id = ${userId} and group_id is null and project_id is null
    )
    select
      (select ${visibleSql({ id: sql`u.id`, isAdmin: sql`u.is_admin` }, ns)}
         from users u, ${table} p where u.id = ${userId} and p.id = ${targetId}) as visible,
      coalesce((select json_agg(json_build_object('source_type', source_type, 'full_path', full_path, 'level', level,
         'notification_email', notification_email) order by depth) from chain), '[]') as chain,
      coalesce((select json_agg(json_build_object('source_type', source_type, 'full_path', full_path,
         'level_there', level_there, 'global_level', global_level) order by depth) from holders
         where user_id = ${userId}), '[]') as holds
  `.execute(db);
  return rows[0]!;
}

/**
 * Why one user is or is not notified: each step of the decision and the engine's answer (the
 * narration reads the engine's own facts, so a disagreement with the engine would show).
 */
export async function explainRecipient(
  db: DbOrTrx,
  target: RecipientTarget,
  request: RecipientsRequest,
  user: Pick<User, 'id' | 'username' | 'email' | 'state' | 'is_admin'>,
): Promise<{ steps: ExplainStep[]; recipient: Recipient | null }> {
  const recipients = await resolveRecipients(db, target, request);
  const recipient = recipients.find((r) => r.user_id === user.id) ?? null;
  const steps: ExplainStep[] = [];
  const visibility = target.kind === 'project' ? target.project.visibility : target.group.visibility;
  const targetName =
    target.kind === 'project' ? `project ${target.project.path_with_namespace}` : `group ${target.group.full_path}`;
  steps.push({ step: 'event', detail: `${request.event} on ${targetName} (${visibility})` });

  const facts = await factsOf(db, target, user.id);
  steps.push({ step: 'state', detail: user.state === 'active' ? 'active' : 'blocked: never notified' });
  steps.push({
    step: 'access',
    detail:
      visibility !== 'private'
        ? `${visibility}: every user may read it`
        : user.is_admin
          ? 'private, but an administrator reads everything'
          : facts.visible
            ? 'private; member of it or of an ancestor group'
            : 'private and not a member: never notified',
  });
  steps.push({
    step: 'own activity',
    detail: request.authorId === user.id ? 'the author: never notified of their own activity' : 'not the author',
  });

  for (const link of facts.chain) {
    steps.push({
      step: 'setting',
      detail: `${describeSource({ type: link.source_type, full_path: link.full_path })}: ${link.level}${link.notification_email ? ` (e-mail ${link.notification_email})` : ''}`,
    });
  }
  const eff = await effectiveSettings(db, user, target);
  steps.push({ step: 'effective level', detail: `${eff.level} (from ${describeSource(eff.source)})` });

  const kinds: CandidateKind[] = [];
  if (request.mentionedIds.includes(user.id)) kinds.push('mention');
  if (request.participantIds.includes(user.id)) kinds.push('participating');
  const holdsAt = facts.holds.map((h) =>
    h.level_there === null
      ? `membership of ${h.source_type} ${h.full_path} (global level ${h.global_level})`
      : h.level_there === INHERIT
        ? `${h.source_type} ${h.full_path} (global there, global level ${h.global_level})`
        : `${h.source_type} ${h.full_path}`,
  );
  if (holdsAt.length) kinds.push('watch');
  steps.push({
    step: 'candidate',
    detail: kinds.length
      ? [
          ...(kinds.includes('mention') ? ['mentioned'] : []),
          ...(kinds.includes('participating') ? ['participant'] : []),
          ...(holdsAt.length ? [`watcher/custom holder at ${holdsAt.join(', ')}`] : []),
        ].join('; ')
      : 'neither participant, mentioned, watcher nor custom holder: not a candidate',
  });
  const flag = flagOn(eff.events, request.event);
  for (const kind of kinds) {
    const ok = levelAllows(eff.level, kind, request.event, flag);
    steps.push({
      step: 'level rule',
      detail: `${eff.level} ${ok ? 'lets' : 'does not let'} a ${kind} candidate through for ${request.event}${
        eff.level === 'custom' ? ` (flag ${request.event} ${flag ? 'on' : 'off'})` : ''
      }`,
    });
  }
  steps.push({
    step: 'result',
    detail: recipient ? `notified (${recipient.reason}) at ${recipient.email}` : 'not notified',
  });
  return { steps, recipient };
}
