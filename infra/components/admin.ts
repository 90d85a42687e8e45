// Admin: the function `lanyard-admin --stack` invokes. IAM-only (lambda:InvokeFunction, audited
// in CloudTrail), no HTTP route and no resource policy, so nothing reaches it from the internet.
import * as pulumi from '@pulumi/pulumi';
import { createServiceFunction } from './service-function';

export interface AdminArgs {
  functionName: string;
  bundleDir: string;
  subnetIds: pulumi.Input<string>[];
  securityGroupId: pulumi.Input<string>;
  environment: Record<string, pulumi.Input<string>>;
  readSecretArns: pulumi.Input<string>[];
  /** The key ring (`secrets rotate session-key`). */
  writeSecretArns: pulumi.Input<string>[];
  logRetentionDays: number;
  tags: Record<string, string>;
  dependsOn?: pulumi.Input<pulumi.Resource>[];
}

export class Admin extends pulumi.ComponentResource {
  readonly functionName: pulumi.Output<string>;
  readonly functionArn: pulumi.Output<string>;

  constructor(name: string, args: AdminArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Admin', name, {}, opts);
    const { fn } = createServiceFunction(
      name,
      {
        functionName: args.functionName,
        description: 'Lanyard administration (invoked by lanyard-admin --stack; IAM only)',
        bundleDir: args.bundleDir,
        memoryMb: 512,
        timeoutSeconds: 60,
        reservedConcurrency: 2,
        subnetIds: args.subnetIds,
        securityGroupId: args.securityGroupId,
        environment: args.environment,
        readSecretArns: args.readSecretArns,
        writeSecretArns: args.writeSecretArns,
        logRetentionDays: args.logRetentionDays,
        tags: args.tags,
        dependsOn: args.dependsOn,
      },
      this,
    );
    this.functionName = fn.name;
    this.functionArn = fn.arn;
    this.registerOutputs({ functionName: this.functionName, functionArn: this.functionArn });
  }
}
