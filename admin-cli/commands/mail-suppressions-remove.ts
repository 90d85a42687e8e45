// `mail suppressions remove ADDRESS`: mail goes to the address again (the person fixed their
// mailbox, or the complaint was a mistake). Audited; the row is kept as history.
import { clearSuppression } from '../../service/domain/mail/suppressions';
import { defineCommand } from '../command';

export default defineCommand<{ address: string }>({
  path: ['mail', 'suppressions', 'remove <address>'],
  describe: 'Send mail to a suppressed address again',
  examples: [['mail suppressions remove ada@example.com', 'ada@example.com gets mail again']],
  options: (y) => y.positional('address', { type: 'string', describe: 'The address (any case)' }),
  async run(args, { db, actor }) {
    const cleared = await clearSuppression(db, String(args.address), { actor });
    return {
      json: { address: cleared.address, removed: true },
      text: `${cleared.address} is no longer suppressed (it was: ${cleared.reason}); mail goes to it again.`,
    };
  },
});
