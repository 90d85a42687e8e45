// `members list (--group FULL_PATH | --project PATH)`: the direct members and their access levels.
import { listMembers } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { table } from '../output';

export default defineCommand<{ group?: string; project?: string }>({
  path: ['members', 'list'],
  describe: 'List the direct members of a group or project',
  examples: [
    ['members list --group acme', "acme's members"],
    ['members list --project acme/platform/api --json', 'as JSON: source, user, access_level'],
  ],
  options: (y) =>
    y
      .option('group', { type: 'string', describe: "The group's full path" })
      .option('project', { type: 'string', describe: "The project's path with namespace" })
      .conflicts('group', 'project'),
  async run(args, { db }) {
    const json = await listMembers(db, args);
    return {
      json,
      text: table(json, [
        { header: 'USER', value: (m) => m.user },
        { header: 'ACCESS LEVEL', value: (m) => m.access_level },
        { header: 'SOURCE', value: (m) => m.source },
      ]),
    };
  },
});
