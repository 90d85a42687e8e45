// `notify events show ID`: an event posted to the intake, who it e-mailed, why (the engine's reason)
// and the delivery state of each message (the outbox's status).
import { getNotificationEvent } from '../../service/domain/notifications/events';
import { defineCommand } from '../command';
import { UserError } from '../errors';
import { recordOf, table } from '../output';

const cut = (text: string, max: number): string =>
  [...text].length > max ? `${[...text].slice(0, max - 1).join('')}…` : text;

export default defineCommand<{ id: string }>({
  path: ['notify', 'events', 'show <id>'],
  describe: 'Show a notification event: who was e-mailed, why, and each delivery state',
  examples: [
    ['notify events show 42', 'event 42 and its recipients'],
    ['notify events show 42 --json', 'as JSON'],
  ],
  options: (y) => y.positional('id', { type: 'string', describe: 'The event id (from `notify send` or the API)' }),
  async run(args, { db }) {
    const id = String(args.id);
    if (!/^[1-9]\d{0,15}$/.test(id)) throw new UserError(`event id "${id}" is not a number`);
    const event = await getNotificationEvent(db, Number(id));
    const { deliveries, ...rest } = event;
    const header = recordOf({
      id: rest.id,
      event: rest.event,
      [rest.project_id === null ? 'group' : 'project']: rest.scope_path,
      target: `${rest.target_type} ${rest.target_ref}: ${rest.target_title}`,
      url: rest.target_url,
      caller: rest.caller,
      idempotency_key: rest.idempotency_key,
      created_at: rest.created_at.toISOString(),
      recipients: rest.recipient_count,
    });
    const rows = table(
      deliveries,
      [
        { header: 'USERNAME', value: (d) => cut(d.username, 16) },
        { header: 'REASON', value: (d) => d.reason },
        { header: 'MAIL', value: (d) => d.mail_id ?? '-' },
        { header: 'STATUS', value: (d) => d.status ?? 'none' },
        { header: 'TRIES', value: (d) => d.attempts ?? '-' },
        { header: 'TO', value: (d) => cut(d.to_address ?? '-', 24) },
      ],
      '(nobody was e-mailed)',
    );
    return { json: event, text: `${header}\n\n${rows}` };
  },
});
