// `groups delete FULL_PATH`: a group with its subgroups, projects and memberships.
// Destructive: confirmed on a terminal, --yes elsewhere.
import { deleteGroup } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { recordOf } from '../output';

export default defineCommand<{ fullPath: string }>({
  path: ['groups', 'delete <full-path>'],
  describe: 'Delete a group, its subgroups and their projects',
  examples: [['groups delete acme/platform --yes', 'delete the subgroup without asking (scripts)']],
  options: (y) => y.positional('full-path', { type: 'string', describe: "The group's full path" }),
  confirm: (args) => `Delete group ${args.fullPath} with its subgroups, projects and members?`,
  async run(args, { db, actor }) {
    const g = await deleteGroup(db, args.fullPath, actor);
    const json = { id: g.id, full_path: g.full_path, name: g.name, visibility: g.visibility };
    return { json, text: `Deleted group ${g.full_path}.\n${recordOf(json)}` };
  },
});
