// `groups create`: a (possibly nested) group.
import { createGroup, VISIBILITIES } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { recordOf } from '../output';

interface Args {
  path: string;
  name?: string;
  parent?: string;
  visibility?: string;
}

export default defineCommand<Args>({
  path: ['groups', 'create'],
  describe: 'Create a group',
  examples: [
    ['groups create --path acme --name "ACME Corp" --visibility internal', 'a top-level group'],
    ['groups create --path platform --parent acme', 'the subgroup acme/platform'],
  ],
  options: (y) =>
    y
      .option('path', { type: 'string', demandOption: true, describe: 'URL path segment' })
      .option('name', { type: 'string', describe: 'Display name (default: the path)' })
      .option('parent', { type: 'string', describe: "The parent group's full path" })
      // Not yargs `choices`: the domain owns the rule, and its message names the field.
      .option('visibility', { type: 'string', describe: `${VISIBILITIES.join(' | ')} (default: private)` }),
  async run(args, { db, actor }) {
    const group = await createGroup(db, {
      path: args.path,
      name: args.name,
      parent: args.parent,
      visibility: args.visibility,
      actor,
    });
    const json = { id: group.id, full_path: group.full_path, name: group.name, visibility: group.visibility };
    return { json, text: `Created group ${group.full_path}.\n${recordOf(json)}` };
  },
});
