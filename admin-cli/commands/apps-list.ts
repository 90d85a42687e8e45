// `apps list`: every OAuth application (never a secret).
import { listApplications } from '../../service/domain/applications';
import { getUserByUsername } from '../../service/domain/users';
import { defineCommand } from '../command';
import { applicationTable, applicationView } from '../views';

export default defineCommand<{ owner?: string }>({
  path: ['apps', 'list'],
  describe: 'List OAuth applications',
  examples: [
    ['apps list', 'every application'],
    ['apps list --owner alice --json', "alice's applications as JSON"],
  ],
  options: (y) => y.option('owner', { type: 'string', describe: 'Only the applications owned by this user' }),
  async run(args, { db }) {
    const owner = args.owner === undefined ? undefined : await getUserByUsername(db, args.owner);
    const views = (await listApplications(db, owner?.id)).map(applicationView);
    return { json: views, text: applicationTable(views) };
  },
});
