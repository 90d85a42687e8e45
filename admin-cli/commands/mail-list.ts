// `mail list [--status pending|sending|sent|failed] [--limit N]`: the outbox, newest first.
import { listMail, parseMailStatus } from '../../service/domain/mail/operations';
import { defineCommand } from '../command';
import { UserError } from '../errors';
import { mailTable, mailView } from '../views';

export default defineCommand<{ status?: string; limit?: string }>({
  path: ['mail', 'list'],
  describe: 'List the outgoing mail, newest first',
  examples: [
    ['mail list', 'the last 100 messages'],
    ['mail list --status failed', 'messages that could not be sent'],
  ],
  options: (y) =>
    y
      .option('status', { type: 'string', describe: 'Only messages in this state: pending, sending, sent or failed' })
      .option('limit', { type: 'string', describe: 'At most this many (default 100, up to 10000)' }),
  async run(args, { db }) {
    const status = args.status === undefined ? undefined : parseMailStatus(String(args.status));
    const limitText = args.limit === undefined ? '100' : String(args.limit);
    if (!/^[1-9]\d*$/.test(limitText) || Number(limitText) > 10_000) {
      throw new UserError(`--limit must be a whole number from 1 to 10000 (got "${limitText}")`);
    }
    const views = (await listMail(db, { status, limit: Number(limitText) })).map(mailView);
    return { json: views, text: mailTable(views) };
  },
});
