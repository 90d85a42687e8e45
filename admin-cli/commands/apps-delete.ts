// `apps delete APP_ID`: removes the application and revokes everything issued to it.
// Destructive: confirmed on a terminal, --yes elsewhere.
import { deleteApplication } from '../../service/domain/applications';
import { defineCommand } from '../command';
import { applicationResult } from '../views';

export default defineCommand<{ appId: string }>({
  path: ['apps', 'delete <app-id>'],
  describe: 'Delete an OAuth application and revoke its tokens',
  examples: [['apps delete 5f2a…e9 --yes', 'delete without asking (scripts)']],
  options: (y) => y.positional('app-id', { type: 'string', describe: 'The Application ID (client_id)' }),
  confirm: (args) => `Delete application ${args.appId}? Every token issued to it stops working.`,
  async run(args, { db, actor }) {
    const app = await deleteApplication(db, args.appId, actor);
    return applicationResult(app, `Deleted application ${app.name}.`);
  },
});
