// `mail suppressions list`: the addresses no mail goes to (hard bounces, complaints), newest first.
import { listSuppressions, type Suppression } from '../../service/domain/mail/suppressions';
import { defineCommand } from '../command';
import { table } from '../output';
import { cut } from '../views';

const view = (s: Suppression) => ({
  address: s.address,
  reason: s.reason,
  source: s.source,
  detail: s.detail,
  created_at: s.created_at.toISOString(),
});

export default defineCommand<Record<string, never>>({
  path: ['mail', 'suppressions', 'list'],
  describe: 'List the suppressed addresses (hard bounces and complaints), newest first',
  examples: [['mail suppressions list --json', 'with the provider’s full diagnostic']],
  async run(_args, { db }) {
    const views = (await listSuppressions(db)).map(view);
    return {
      json: views,
      // Within 80 columns: a long address is cut, and the detail (an SMTP reply, an SES diagnostic)
      // is in --json only. REASON, SOURCE and SINCE take at most 9 + 6 + 10 columns and 3 gaps.
      text: table(views, [
        { header: 'ADDRESS', value: (s) => cut(s.address, 48) },
        { header: 'REASON', value: (s) => s.reason },
        { header: 'SOURCE', value: (s) => s.source },
        { header: 'SINCE', value: (s) => s.created_at.slice(0, 10) },
      ]),
    };
  },
});
