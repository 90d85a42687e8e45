// `notify explain`: each step of the decision whether one user gets the e-mail for an event.
import { explainRecipient } from '../../service/domain/notifications/explain';
import { getUserByUsername } from '../../service/domain/users';
import { defineCommand } from '../command';
import { type NotifyEventArgs, notifyEventOptions, notifyEventRequest } from './notify-event-args';
import { record } from '../output';

interface Args extends NotifyEventArgs {
  user: string;
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
    notifyEventOptions(y.option('user', { type: 'string', demandOption: true, describe: 'The username to explain' })),
  async run(args, { db }) {
    const { target, request } = await notifyEventRequest(db, args);
    const user = await getUserByUsername(db, args.user);
    const { steps, recipient } = await explainRecipient(db, target, request, user);
    return {
      json: { user: user.username, event: request.event, steps, recipient },
      text: record(steps.map((s, i) => [`${i + 1}. ${s.step}`, s.detail] as const)),
    };
  },
});
