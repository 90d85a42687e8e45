// `notify recipients`: who gets the e-mail for an event on a project, at which address and why.
import { requestFromNames, resolveRecipients } from '../../service/domain/notification-recipients';
import { NOTIFICATION_EVENTS } from '../../service/domain/notification-settings';
import { defineCommand } from '../command';
import { table } from '../output';

interface Args {
  project: string;
  event: string;
  author?: string;
  participant?: string[];
  mentioned?: string[];
}

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
  options: (y) =>
    y
      .option('project', { type: 'string', demandOption: true, describe: "The project's path with namespace" })
      .option('event', { type: 'string', demandOption: true, describe: NOTIFICATION_EVENTS.join(' | ') })
      .option('author', { type: 'string', describe: 'Who acted (never notified of their own activity)' })
      .option('participant', { type: 'string', array: true, describe: 'A participant (repeatable)' })
      .option('mentioned', { type: 'string', array: true, describe: 'A mentioned user (repeatable)' }),
  async run(args, { db }) {
    const { target, request } = await requestFromNames(db, {
      project: args.project,
      event: args.event,
      author: args.author,
      participants: args.participant,
      mentioned: args.mentioned,
    });
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
