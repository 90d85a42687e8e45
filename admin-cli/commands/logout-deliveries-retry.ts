// `logout-deliveries retry ID | --failed`: send a failed logout token again now, with a fresh
// attempt budget and the same jti (for a relying party that was down past every retry). Audited.
import { retryFailedLogoutDeliveries, retryLogoutDelivery } from '../../service/domain/backchannel-logout';
import { defineCommand } from '../command';
import { UsageError, UserError } from '../errors';
import { recordOf } from '../output';
import { logoutDeliveryView } from '../views';

export default defineCommand<{ id?: string; failed?: boolean }>({
  path: ['logout-deliveries', 'retry [id]'],
  describe: 'Send a failed logout token again (or every failed one)',
  examples: [
    ['logout-deliveries retry 7', 'delivery 7 goes back to the queue, due now'],
    ['logout-deliveries retry --failed', 'every failed delivery goes back to the queue'],
  ],
  options: (y) =>
    y
      .positional('id', { type: 'string', describe: 'The delivery id (from `logout-deliveries list`)' })
      .option('failed', { type: 'boolean', describe: 'Every failed delivery' }),
  async run(args, { db, actor, progress }) {
    if ((args.id === undefined) === !args.failed) throw new UsageError('give a delivery id or --failed (not both)');
    if (args.failed) {
      const n = await retryFailedLogoutDeliveries(db, actor);
      progress(`${n} failed logout deliveries queued again`);
      return {
        json: { retried: n },
        text: `${n} failed logout deliveries queued again; the sender sends them shortly.`,
      };
    }
    const id = String(args.id);
    if (!/^[1-9]\d{0,15}$/.test(id))
      throw new UserError(`logout delivery id "${id}" is not a number (see \`lanyard-admin logout-deliveries list\`)`);
    const view = logoutDeliveryView(await retryLogoutDelivery(db, Number(id), actor));
    return { json: view, text: `Logout delivery ${view.id} queued again.\n${recordOf(view)}` };
  },
});
