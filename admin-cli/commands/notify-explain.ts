// `notify explain`: each step of the decision whether one user gets the e-mail for an event.
import { explainRecipient, requestFromNames } from '../../service/domain/notification-recipients';
import { NOTIFICATION_EVENTS } from '../../service/domain/notification-settings';
import { getUserByUsername } from '../../service/domain/users';
import { defineCommand } from '../command';
import { record } from '../output';

interface Args {
  user: string;
  project: string;
  event: string;
  author?: string;
  participant?: string[];
  mentioned?: string[];
}

export default defineCommand<Args>({
  path: ['notify', 'explain'],
  describe: 'Explain, step by step, whether a user is notified of an event on a project',
  examples: [
    ['notify explain --user bob --project acme/api --event new_issue', 'why bob does (not) hear of new issues'],
    [
      'notify explain --user bob --project acme/api --event new_note --participant bob',
      'the same for a comment in a thread bob takes part in',
    ],
  ],
  options: (y) =>
    y
      .option('user', { type: 'string', demandOption: true, describe: 'The username to explain' })
      .option('project', { type: 'string', demandOption: true, describe: "The project's path with namespace" })
      .option('event', { type: 'string', demandOption: true, describe: NOTIFICATION_EVENTS.join(' | ') })
      .option('author', { type: 'string', describe: 'Who acted' })
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
    const user = await getUserByUsername(db, args.user);
    const { steps, recipient } = await explainRecipient(db, target, request, user);
    return {
      json: { user: user.username, event: request.event, steps, recipient },
      text: record(steps.map((s, i) => [`${i + 1}. ${s.step}`, s.detail] as const)),
    };
  },
});
