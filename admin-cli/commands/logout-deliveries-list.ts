// `logout-deliveries list [--status …] [--limit N]`: the back-channel logout outbox, newest first —
// where an operator sees the logout tokens a relying party never accepted (status failed).
import { listLogoutDeliveries } from '../../service/domain/backchannel-logout';
import { parseMailStatus } from '../../service/domain/mail/operations';
import { defineCommand } from '../command';
import { UserError } from '../errors';
import { logoutDeliveryTable, logoutDeliveryView } from '../views';

export default defineCommand<{ status?: string; limit?: string }>({
  path: ['logout-deliveries', 'list'],
  describe: 'List back-channel logout tokens sent or to send, newest first',
  examples: [
    ['logout-deliveries list', 'the last 100'],
    ['logout-deliveries list --status failed', 'given up after every retry'],
  ],
  options: (y) =>
    y
      .option('status', { type: 'string', describe: 'Only these: pending, sending, sent or failed' })
      .option('limit', { type: 'string', describe: 'At most this many (default 100, up to 10000)' }),
  async run(args, { db }) {
    const status = args.status === undefined ? undefined : parseMailStatus(String(args.status));
    const limitText = args.limit === undefined ? '100' : String(args.limit);
    if (!/^[1-9]\d*$/.test(limitText) || Number(limitText) > 10_000) {
      throw new UserError(`--limit must be a whole number from 1 to 10000 (got "${limitText}")`);
    }
    const views = (await listLogoutDeliveries(db, { status, limit: Number(limitText) })).map(logoutDeliveryView);
    return { json: views, text: logoutDeliveryTable(views) };
  },
});
