// `notify recipients`: who gets the e-mail for an event on a project, at which address and why.
import { resolveRecipients } from '../../service/domain/notifications/recipients';
import { defineCommand } from '../command';
import { type NotifyEventArgs, notifyEventOptions, notifyEventRequest } from './notify-event-args';
import { table } from '../output';

type Args = NotifyEventArgs;

export default defineCommand<Args>({
  path: ['notify', 'recipients'],
  describe: 'Resolve the recipients of a notification event on a project',
  examples: [
    ['notify recipients --project acme/api --event new_issue --author alice', 'who hears of a new issue by alice'],
    [
      'notify recipients --project acme/api --event new_note --participant bob --mentioned carol --json',
      'a comment in a thread bob takes part in, mentioning carol',
    ],
  ],
  options: notifyEventOptions,
  async run(args, { db }) {
    const { target, request } = await notifyEventRequest(db, args);
    const recipients = await resolveRecipients(db, target, request);
    return {
      json: { recipients },
      text: table(
        recipients,
        [
          { header: 'USERNAME', value: (r) => r.username },
          { header: 'EMAIL', value: (r) => r.email },
          { header: 'REASON', value: (r) => r.reason },
          { header: 'LEVEL', value: (r) => r.level },
          {
            header: 'FROM',
            value: (r) => (r.source.type === 'global' ? 'global' : `${r.source.type} ${r.source.full_path}`),
          },
        ],
        '(nobody is notified)',
      ),
    };
  },
});
