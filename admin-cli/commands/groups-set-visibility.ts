// `groups set-visibility FULL_PATH VISIBILITY`: never above the parent group's, never below a
// project's or subgroup's in it (GitLab's rules and messages; domain/namespaces.ts).
import { groupSummary, setGroupVisibility, VISIBILITIES } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { recordOf } from '../output';

export default defineCommand<{ full_path: string; visibility: string }>({
  path: ['groups', 'set-visibility <full_path> <visibility>'],
  describe: "Change a group's visibility",
  examples: [['groups set-visibility acme/platform internal', 'visible to every signed-in user']],
  options: (y) =>
    y
      .positional('full_path', { type: 'string', describe: "The group's full path" })
      // Not yargs `choices`: the domain owns the rule, and its message names the field.
      .positional('visibility', { type: 'string', describe: VISIBILITIES.join(' | ') }),
  async run(args, { db, actor }) {
    const group = await setGroupVisibility(db, args.full_path, { visibility: args.visibility, actor });
    const json = groupSummary(group);
    return { json, text: `Group ${group.full_path} is now ${group.visibility}.\n${recordOf(json)}` };
  },
});
