// `members remove (--group FULL_PATH | --project PATH) --user U`: end one direct membership.
// Destructive: confirmed on a terminal, --yes elsewhere.
import { removeMember } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { recordOf } from '../output';

interface Args {
  group?: string;
  project?: string;
  user: string;
}

export default defineCommand<Args>({
  path: ['members', 'remove'],
  describe: 'Remove a member from a group or project',
  examples: [['members remove --group acme --user alice --yes', 'alice is no longer a member of acme']],
  options: (y) =>
    y
      .option('group', { type: 'string', describe: "The group's full path" })
      .option('project', { type: 'string', describe: "The project's path with namespace" })
      .conflicts('group', 'project')
      .option('user', { type: 'string', demandOption: true, describe: 'The username' }),
  confirm: (args) => `Remove ${args.user} from ${args.group ?? args.project}?`,
  async run(args, { db, actor }) {
    const member = await removeMember(db, { group: args.group, project: args.project, username: args.user, actor });
    return { json: member, text: `Removed ${member.user} from ${member.source}.\n${recordOf(member)}` };
  },
});
