// Load the Pulumi program exactly as `pulumi up` would, minus the engine: the registration of
// @pulumi/pulumi/cmd/run/run.js (its ts-node — vendored 7.0.1 unless the project has one — with
// the project's TypeScript, type-checking on, the root tsconfig.json merged over Pulumi's
// defaults, cwd = the directory of Pulumi.yaml), then the `main` of Pulumi.yaml under mocks.
// Prints {"outputs": {...}, "resources": n} on stdout; a type error fails the require.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
process.chdir(root);
const tsutils = require('@pulumi/pulumi/tsutils');
const compilerOptions = tsutils.loadTypeScriptCompilerOptions('tsconfig.json');
const { tsnodeRequire, typescriptRequire } = tsutils.typeScriptRequireStrings();
require(tsnodeRequire).register({
  compiler: typescriptRequire,
  transpileOnly: compilerOptions.noCheck,
  project: 'tsconfig.json',
  skipProject: !fs.existsSync('tsconfig.json'),
  compilerOptions: {
    target: 'ES2020',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    sourceMap: 'true',
    ...compilerOptions,
  },
});

const pulumi = require('@pulumi/pulumi');
let resources = 0;
pulumi.runtime.setMocks(
  {
    newResource: (args) => {
      resources++;
      const state = {
        ...args.inputs,
        name: args.inputs.name ?? args.name,
        arn: `arn:aws:mock:eu-west-1:123456789012:${args.name}`,
      };
      if (args.type === 'aws:rds/instance:Instance')
        state.masterUserSecrets = [{ secretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-x' }];
      return { id: `${args.name}-id`, state };
    },
    call: (args) =>
      args.token === 'aws:index/getAvailabilityZones:getAvailabilityZones'
        ? { names: ['eu-west-1a', 'eu-west-1b'] }
        : { region: 'eu-west-1', name: 'eu-west-1' },
  },
  'lanyard',
  'loader-check',
  false,
);
pulumi.runtime.setConfig('aws:region', 'eu-west-1');

const main = /^main:\s*(\S+)/m.exec(fs.readFileSync('Pulumi.yaml', 'utf8'))[1];
const program = require(path.resolve(main));
(async () => {
  const outputs = {};
  for (const [key, value] of Object.entries(program)) {
    outputs[key] = pulumi.Output.isInstance(value) ? await new Promise((resolve) => value.apply(resolve)) : value;
  }
  process.stdout.write(
    JSON.stringify({ typescript: require(typescriptRequire).version, tsnode: tsnodeRequire, outputs, resources }) +
      '\n',
  );
})().catch((err) => {
  process.stderr.write(`${String(err?.stack ? err.stack : err)}\n`);
  process.exit(1);
});
