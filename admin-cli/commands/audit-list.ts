// `audit list`: the audit trail, newest first, filtered and one page at a time.
import { listAuditTrail } from '../../service/domain/audit';
import { defineCommand } from '../command';
import { table } from '../output';

interface Args {
  actor?: string;
  action?: string;
  targetType?: string;
  targetId?: string;
  since?: string;
  until?: string;
  page: number;
  perPage: number;
}

export default defineCommand<Args>({
  path: ['audit', 'list'],
  describe: 'List audit events, newest first',
  examples: [
    ['audit list', 'the 20 latest events'],
    ['audit list --action user. --since 2026-11-01 --per-page 100', 'what was done to users this month'],
    ['audit list --actor cli:ops --page 2 --json', "the second page of one operator's events, as JSON"],
  ],
  options: (y) =>
    y
      .option('actor', { type: 'string', describe: 'Who acted: cli:<user>, user:<username>, an IAM ARN…' })
      .option('action', { type: 'string', describe: 'An action (user.block), or a prefix ending in "." (user.)' })
      .option('target-type', { type: 'string', describe: 'user, application, group, project…' })
      .option('target-id', { type: 'string', describe: 'The target’s id' })
      .option('since', { type: 'string', describe: 'At or after: YYYY-MM-DD (UTC) or an ISO 8601 time' })
      .option('until', { type: 'string', describe: 'Before: YYYY-MM-DD (UTC) or an ISO 8601 time' })
      .option('page', { type: 'number', default: 1, describe: 'Page number, from 1' })
      .option('per-page', { type: 'number', default: 20, describe: 'Events per page, 1 to 100' }),
  async run(args, { db }) {
    const { total, events } = await listAuditTrail(db, {
      actor: args.actor,
      action: args.action,
      targetType: args.targetType,
      targetId: args.targetId,
      since: args.since === undefined ? undefined : new Date(args.since),
      until: args.until === undefined ? undefined : new Date(args.until),
      page: args.page,
      perPage: args.perPage,
    });
    const pages = Math.max(1, Math.ceil(total / args.perPage));
    const json = { events, page: args.page, per_page: args.perPage, total };
    const text = `${table(events, [
      { header: 'ID', value: (e) => e.id },
      { header: 'TIME (UTC)', value: (e) => e.created_at.slice(0, 16).replace('T', ' ') },
      { header: 'ACTOR', value: (e) => e.actor },
      { header: 'EVENT', value: (e) => [e.action, e.target_type, e.target_id].filter(Boolean).join(' ') },
      // key=value pairs, so a narrow column wraps between them.
      { header: 'DETAILS', value: (e) => Object.entries(e.details).map(([k, v]) => `${k}=${JSON.stringify(v)}`) },
    ])}\n\nPage ${args.page} of ${pages} (${total} event${total === 1 ? '' : 's'}).`;
    return { json, text };
  },
});
