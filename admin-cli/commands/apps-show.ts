// `apps show APP_ID`: one application (never its secret).
import { getApplicationByUid } from '../../service/domain/applications';
import { defineCommand } from '../command';
import { applicationResult } from '../views';

export default defineCommand<{ appId: string }>({
  path: ['apps', 'show <app-id>'],
  describe: 'Show an OAuth application',
  examples: [['apps show 5f2a…e9 --json', 'the application with that Application ID, as JSON']],
  options: (y) => y.positional('app-id', { type: 'string', describe: 'The Application ID (client_id)' }),
  async run(args, { db }) {
    return applicationResult(await getApplicationByUid(db, args.appId));
  },
});
