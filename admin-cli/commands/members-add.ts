// `members add`: give a user an access level in a group or project (or change it).
import { ACCESS_LEVELS, addMember } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { recordOf } from '../output';

interface Args {
  group?: string;
  project?: string;
  user: string;
  access: string;
}

export default defineCommand<Args>({
  path: ['members', 'add'],
  describe: 'Add a member to a group or project (or change their access level)',
  examples: [
    ['members add --group acme --user alice --access maintainer', 'alice maintains acme and everything in it'],
    ['members add --project acme/platform/api --user bob --access developer', 'bob develops one project'],
  ],
  options: (y) =>
    y
      .option('group', { type: 'string', describe: "The group's full path" })
      .option('project', { type: 'string', describe: "The project's path with namespace" })
      .conflicts('group', 'project')
      .option('user', { type: 'string', demandOption: true, describe: 'The username' })
      .option('access', { type: 'string', demandOption: true, describe: Object.keys(ACCESS_LEVELS).join(' | ') }),
  async run(args, { db, actor }) {
    const member = await addMember(db, {
      group: args.group,
      project: args.project,
      username: args.user,
      access: args.access,
      actor,
    });
    return {
      json: member,
      text: `${member.user} is now ${args.access} (${member.access_level}) of ${member.source}.\n${recordOf(member)}`,
    };
  },
});
