// `mail retry ID | --failed`: send failed messages again now, with a fresh attempt budget and the
// same Message-ID. Audited.
import { retryFailedMail, retryMail } from '../../service/domain/mail/operations';
import { defineCommand } from '../command';
import { UsageError } from '../errors';
import { recordOf } from '../output';
import { mailId, mailView } from '../views';

export default defineCommand<{ id?: string; failed?: boolean }>({
  path: ['mail', 'retry [id]'],
  describe: 'Send a failed message again (or every failed one)',
  examples: [
    ['mail retry 42', 'message 42 goes back to the queue, due now'],
    ['mail retry --failed', 'every failed message goes back to the queue'],
  ],
  options: (y) =>
    y
      .positional('id', { type: 'string', describe: 'The message id (from `mail list`)' })
      .option('failed', { type: 'boolean', describe: 'Every failed message' }),
  async run(args, { db, actor, progress }) {
    if ((args.id === undefined) === !args.failed) throw new UsageError('give a message id or --failed (not both)');
    if (args.failed) {
      const n = await retryFailedMail(db, actor);
      progress(`${n} failed message(s) queued again`);
      return { json: { retried: n }, text: `${n} failed message(s) queued again; the sender sends them shortly.` };
    }
    const view = mailView(await retryMail(db, mailId(args.id), actor));
    return { json: view, text: `Mail ${view.id} queued again.\n${recordOf(view)}` };
  },
});
