// `apps show ID|APP_ID`: one application (never its secret), by its id or its App ID.
import { getApplicationByIdOrUid } from '../../service/domain/applications';
import { defineCommand } from '../command';
import { applicationResult } from '../views';

export default defineCommand<{ appId: string }>({
  path: ['apps', 'show <app-id>'],
  describe: 'Show an OAuth application',
  examples: [
    ['apps show 3', 'the application with id 3 (the first column of `apps list`)'],
    ['apps show 5f2a…e9 --json', 'the application with that App ID (client_id), as JSON'],
  ],
  options: (y) => y.positional('app-id', { type: 'string', describe: 'The id, or the App ID (client_id)' }),
  async run(args, { db }) {
    return applicationResult(await getApplicationByIdOrUid(db, args.appId));
  },
});
