// `projects create`: a project in a group.
import { createProject, projectSummary, VISIBILITIES } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { recordOf } from '../output';

interface Args {
  path: string;
  name?: string;
  visibility?: string;
}

export default defineCommand<Args>({
  path: ['projects', 'create'],
  describe: 'Create a project in a group',
  examples: [
    [
      'projects create --path acme/platform/api --name "Platform API" --visibility public',
      'a project in the subgroup acme/platform',
    ],
  ],
  options: (y) =>
    y
      .option('path', {
        type: 'string',
        demandOption: true,
        describe: "NAMESPACE/PATH: the group's full path, then the project's path",
      })
      .option('name', { type: 'string', describe: 'Display name (default: the path)' })
      .option('visibility', { type: 'string', describe: `${VISIBILITIES.join(' | ')} (default: private)` }),
  async run(args, { db, actor }) {
    const project = await createProject(db, { path: args.path, name: args.name, visibility: args.visibility, actor });
    const json = projectSummary(project);
    return { json, text: `Created project ${project.path_with_namespace}.\n${recordOf(json)}` };
  },
});
