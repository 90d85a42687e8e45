// `apps list`: every OAuth application (never a secret).
import { listApplications } from '../../service/domain/applications';
import { getUserByUsername } from '../../service/domain/users';
import { defineCommand } from '../command';
import { applicationTable, applicationView } from '../views';

export default defineCommand<{ owner?: string; dynamic: boolean }>({
  path: ['apps', 'list'],
  describe: 'List OAuth applications',
  examples: [
    ['apps list', 'every application'],
    ['apps list --owner alice --json', "alice's applications as JSON"],
    ['apps list --dynamic', 'the applications that registered themselves (RFC 7591)'],
  ],
  options: (y) =>
    y.option('owner', { type: 'string', describe: 'Only the applications owned by this user' }).option('dynamic', {
      type: 'boolean',
      default: false,
      describe: 'Only dynamically registered applications (pruned after 30 days unused)',
    }),
  async run(args, { db }) {
    const owner = args.owner === undefined ? undefined : await getUserByUsername(db, args.owner);
    const views = (await listApplications(db, owner?.id))
      .filter((a) => !args.dynamic || a.dynamically_registered)
      .map(applicationView);
    return { json: views, text: applicationTable(views) };
  },
});
