// Run the Pulumi program (infra/index.ts) offline under pulumi.runtime.setMocks and record every
// resource: its type, name, inputs, the resources it depends on, and whether it is protected.
// setMocks must run before the program is imported; one program per test file (vitest runs each
// file in its own process), so a file that needs other stack config loads its own.
import * as pulumi from '@pulumi/pulumi';

export interface RecordedResource {
  type: string;
  name: string;
  inputs: Record<string, any>;
  /** Names (not URNs) of the resources this one depends on explicitly or through inputs. */
  dependsOn: string[];
  protect: boolean;
}

export interface LoadedStack {
  resources: RecordedResource[];
  outputs: Record<string, unknown>;
  byType(type: string): RecordedResource[];
  one(type: string, name?: string): RecordedResource;
}

const ACCOUNT = '123456789012';
const REGION = 'eu-west-1';

/** Plausible provider-computed attributes, so outputs derived from them can be asserted. */
function computed(type: string, name: string, inputs: Record<string, any>): Record<string, unknown> {
  const arn = (service: string, resource: string) => `arn:aws:${service}:${REGION}:${ACCOUNT}:${resource}`;
  switch (type) {
    case 'aws:rds/instance:Instance':
      return {
        address: `${inputs.identifier}.abcdefghijkl.${REGION}.rds.amazonaws.com`,
        endpoint: `${inputs.identifier}.abcdefghijkl.${REGION}.rds.amazonaws.com:5432`,
        port: 5432,
        masterUserSecrets: [
          {
            secretArn: arn('secretsmanager', `secret:rds!db-0123-4567-AbCdEf`),
            secretStatus: 'active',
            kmsKeyId: 'alias/aws/secretsmanager',
          },
        ],
      };
    case 'aws:rds/proxy:Proxy':
      return {
        arn: arn('rds', `db-proxy:prx-0123456789abcdef0`),
        endpoint: `${inputs.name}.proxy-abcdefghijkl.${REGION}.rds.amazonaws.com`,
      };
    case 'aws:secretsmanager/secret:Secret':
      return { arn: arn('secretsmanager', `secret:${inputs.namePrefix ?? name}AbCdEf`) };
    case 'aws:cloudwatch/logGroup:LogGroup':
      return { arn: arn('logs', `log-group:${inputs.name}`) };
    case 'aws:iam/role:Role':
      return { arn: `arn:aws:iam::${ACCOUNT}:role/${name}` };
    case 'aws:lambda/function:Function':
      return {
        arn: arn('lambda', `function:${inputs.name}`),
        invokeArn: `arn:aws:apigateway:${REGION}:lambda:path/2015-03-31/functions/${arn('lambda', `function:${inputs.name}`)}/invocations`,
      };
    case 'aws:apigatewayv2/api:Api':
      return {
        apiEndpoint: `https://abc123.execute-api.${REGION}.amazonaws.com`,
        executionArn: arn('execute-api', 'abc123'),
      };
    case 'aws:apigatewayv2/domainName:DomainName':
      return {
        domainNameConfiguration: {
          ...inputs.domainNameConfiguration,
          targetDomainName: `d-abc.execute-api.${REGION}.amazonaws.com`,
        },
      };
    case 'aws:lambda/invocation:Invocation':
      return { result: '{"applied":["0001-initial-schema"],"pending":[],"newlyApplied":[]}' };
    case 'aws:apigateway/restApi:RestApi':
      return { rootResourceId: 'root-resource', executionArn: arn('execute-api', 'rest123') };
    case 'aws:apigateway/stage:Stage':
      return { arn: `arn:aws:apigateway:${REGION}::/restapis/rest123/stages/${inputs.stageName}` };
    case 'aws:apigateway/domainName:DomainName':
      return { regionalDomainName: `d-rest.execute-api.${REGION}.amazonaws.com` };
    case 'aws:wafv2/webAcl:WebAcl':
      return { arn: arn('wafv2', `regional/webacl/${inputs.name}/0123`) };
    case 'aws:s3/bucket:Bucket':
      return { arn: `arn:aws:s3:::${inputs.bucketPrefix}0123`, bucket: `${inputs.bucketPrefix}0123` };
    case 'aws:cloudtrail/trail:Trail':
      return { arn: arn('cloudtrail', `trail/${inputs.name}`) };
    case 'aws:cloudwatch/eventRule:EventRule':
      return { arn: arn('events', `rule/${inputs.name}`) };
    case 'aws:sns/topic:Topic':
      return { arn: arn('sns', `${inputs.namePrefix ?? name}topic`) };
    case 'aws:sesv2/emailIdentity:EmailIdentity':
      return {
        arn: arn('ses', `identity/${inputs.emailIdentity}`),
        dkimSigningAttributes: { ...inputs.dkimSigningAttributes, tokens: ['tok1', 'tok2', 'tok3'] },
      };
    case 'aws:sesv2/configurationSet:ConfigurationSet':
      return { arn: arn('ses', `configuration-set/${inputs.configurationSetName}`) };
    case 'aws:sqs/queue:Queue':
      return { arn: arn('sqs', inputs.name), url: `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${inputs.name}` };
    default:
      return {};
  }
}

export async function loadStack(config: Record<string, string> = {}, stackName = 'prod'): Promise<LoadedStack> {
  const resources: RecordedResource[] = [];
  const pending = new Map<string, { dependsOn: string[]; protect: boolean }>();
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        const state = {
          ...args.inputs,
          name: args.inputs.name ?? args.name,
          ...computed(args.type, args.name, args.inputs),
        };
        const extra = pending.get(args.name) ?? { dependsOn: [], protect: false };
        resources.push({ type: args.type, name: args.name, inputs: args.inputs, ...extra });
        // An S3 bucket's id is its name.
        const id = args.type === 'aws:s3/bucket:Bucket' ? String(state.bucket) : `${args.name}-id`;
        return { id, state };
      },
      call(args) {
        if (args.token === 'aws:index/getAvailabilityZones:getAvailabilityZones') {
          return { names: [`${REGION}a`, `${REGION}b`, `${REGION}c`], zoneIds: ['euw1-az1', 'euw1-az2', 'euw1-az3'] };
        }
        if (args.token === 'aws:index/getRegion:getRegion') return { region: REGION, name: REGION, id: REGION };
        if (args.token === 'aws:index/getCallerIdentity:getCallerIdentity') {
          return {
            accountId: ACCOUNT,
            arn: `arn:aws:iam::${ACCOUNT}:user/deployer`,
            userId: 'AIDEXAMPLE',
            id: ACCOUNT,
          };
        }
        throw new Error(`unexpected call ${args.token}`);
      },
    },
    'lanyard',
    stackName,
    false,
  );
  // Record what the mocks interface does not pass on: dependencies and `protect`.
  const monitor = pulumi.runtime.getMonitor() as any;
  const register = monitor.registerResource.bind(monitor);
  monitor.registerResource = (req: any, callback: any) => {
    const names: string[] = [...req.getDependenciesList()];
    req.getPropertydependenciesMap().forEach((deps: any) => {
      names.push(...deps.getUrnsList());
    });
    pending.set(req.getName(), {
      dependsOn: [...new Set(names.map((urn: string) => urn.split('::').pop()!))],
      protect: Boolean(req.getProtect()),
    });
    return register(req, callback);
  };
  for (const [key, value] of Object.entries({ 'aws:region': REGION, ...config })) pulumi.runtime.setConfig(key, value);

  const program = await import('../../infra/index.js');
  const outputs: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(program)) {
    outputs[key] = pulumi.Output.isInstance(value)
      ? await new Promise((resolve) => (value as pulumi.Output<unknown>).apply(resolve))
      : value;
  }
  // Let registrations made inside apply callbacks settle.
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 10));

  const byType = (type: string) => resources.filter((r) => r.type === type);
  return {
    resources,
    outputs,
    byType,
    one(type, name) {
      const found = byType(type).filter((r) => name === undefined || r.name === name);
      if (found.length !== 1)
        throw new Error(`expected one ${type}${name ? ` named ${name}` : ''}, found ${found.length}`);
      return found[0];
    },
  };
}
