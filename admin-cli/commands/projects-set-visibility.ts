// `projects set-visibility PATH VISIBILITY`: never above its group's (GitLab's rule and message;
// domain/namespaces.ts).
import { projectSummary, setProjectVisibility, VISIBILITIES } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { recordOf } from '../output';

export default defineCommand<{ path: string; visibility: string }>({
  path: ['projects', 'set-visibility <path> <visibility>'],
  describe: "Change a project's visibility",
  examples: [['projects set-visibility acme/api private', 'members only']],
  options: (y) =>
    y
      .positional('path', { type: 'string', describe: 'NAMESPACE/PATH' })
      .positional('visibility', { type: 'string', describe: VISIBILITIES.join(' | ') }),
  async run(args, { db, actor }) {
    const project = await setProjectVisibility(db, args.path, { visibility: args.visibility, actor });
    const json = projectSummary(project);
    return { json, text: `Project ${project.path_with_namespace} is now ${project.visibility}.\n${recordOf(json)}` };
  },
});
