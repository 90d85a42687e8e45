// One Lanyard function, the way all three are built: its own log group (with retention, JSON
// logs), its own role with an inline least-privilege policy (policies.ts), the esbuild bundle
// as a FileArchive, nodejs22.x on arm64, attached to the isolated subnets.
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import { functionLogGroupName } from '../names';
import { functionPolicy, lambdaAssumeRolePolicy } from '../policies';

export const RUNTIME = 'nodejs22.x';
export const ARCHITECTURE = 'arm64';

/** What the stack decides for every function (infra/index.ts); the Api, Migrations and Admin args extend it. */
export interface FunctionArgs {
  functionName: string;
  /** The bundle directory (dist/lambda/<name>): index.js, rds-ca.pem, any native packages under node_modules/ and the files index.js loads lazily (webauthn.js, qr.js, openapi.json, schemas/, the option validators). */
  bundleDir: string;
  subnetIds: pulumi.Input<string>[];
  securityGroupId: pulumi.Input<string>;
  /** Non-secret settings: secret ARNs, the database host. */
  environment: Record<string, pulumi.Input<string>>;
  readSecretArns: pulumi.Input<string>[];
  writeSecretArns?: pulumi.Input<string>[];
  logRetentionDays: number;
  tags: Record<string, string>;
  dependsOn?: pulumi.Input<pulumi.Resource>[];
}

/** What each component decides for its own function. */
export interface ServiceFunctionArgs extends FunctionArgs {
  description: string;
  /** The exported function of the bundle to run; default index.handler. */
  handler?: string;
  memoryMb: number;
  timeoutSeconds: number;
  /** -1: no reservation. */
  reservedConcurrency: number;
}

/** The FunctionArgs members of a component's args (and nothing else of them). */
export function functionArgs(args: FunctionArgs): FunctionArgs {
  return {
    functionName: args.functionName,
    bundleDir: args.bundleDir,
    subnetIds: args.subnetIds,
    securityGroupId: args.securityGroupId,
    environment: args.environment,
    readSecretArns: args.readSecretArns,
    writeSecretArns: args.writeSecretArns,
    logRetentionDays: args.logRetentionDays,
    tags: args.tags,
    dependsOn: args.dependsOn,
  };
}

export interface ServiceFunction {
  fn: aws.lambda.Function;
  role: aws.iam.Role;
  logGroup: aws.cloudwatch.LogGroup;
}

export function createServiceFunction(
  name: string,
  args: ServiceFunctionArgs,
  parent: pulumi.Resource,
): ServiceFunction {
  const logGroup = new aws.cloudwatch.LogGroup(
    `${name}-log`,
    {
      name: functionLogGroupName(args.functionName),
      retentionInDays: args.logRetentionDays,
      tags: args.tags,
    },
    { parent },
  );

  const role = new aws.iam.Role(
    `${name}-role`,
    {
      description: `Execution role of ${args.functionName} only`,
      assumeRolePolicy: JSON.stringify(lambdaAssumeRolePolicy()),
      tags: args.tags,
    },
    { parent },
  );

  const policy = new aws.iam.RolePolicy(
    `${name}-policy`,
    {
      role: role.id,
      policy: pulumi
        .all([logGroup.arn, pulumi.all(args.readSecretArns), pulumi.all(args.writeSecretArns ?? [])])
        .apply(([logGroupArn, readSecretArns, writeSecretArns]) =>
          JSON.stringify(functionPolicy({ logGroupArn, readSecretArns, writeSecretArns })),
        ),
    },
    { parent },
  );

  const fn = new aws.lambda.Function(
    `${name}-fn`,
    {
      name: args.functionName,
      description: args.description,
      runtime: RUNTIME,
      architectures: [ARCHITECTURE],
      handler: args.handler ?? 'index.handler',
      code: new pulumi.asset.FileArchive(args.bundleDir),
      memorySize: args.memoryMb,
      timeout: args.timeoutSeconds,
      reservedConcurrentExecutions: args.reservedConcurrency,
      role: role.arn,
      vpcConfig: { subnetIds: args.subnetIds, securityGroupIds: [args.securityGroupId] },
      environment: { variables: { NODE_ENV: 'production', ...args.environment } },
      // pino already writes JSON lines; the app's own LOG_LEVEL filters them.
      loggingConfig: { logFormat: 'JSON', logGroup: logGroup.name, systemLogLevel: 'WARN' },
      tags: args.tags,
    },
    { parent, dependsOn: [policy, logGroup, ...(args.dependsOn ?? [])] },
  );

  return { fn, role, logGroup };
}
