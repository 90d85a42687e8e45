// Admin: the function `lanyard-admin --stack` invokes. IAM-only (lambda:InvokeFunction, audited
// in CloudTrail), no HTTP route and no resource policy, so nothing reaches it from the internet.
import * as pulumi from '@pulumi/pulumi';
import { createServiceFunction, type FunctionArgs, functionArgs } from './service-function';

export interface AdminArgs extends FunctionArgs {
  /** The key ring (`secrets rotate session-key`). */
  writeSecretArns: pulumi.Input<string>[];
}

export class Admin extends pulumi.ComponentResource {
  readonly functionName: pulumi.Output<string>;
  readonly functionArn: pulumi.Output<string>;

  constructor(name: string, args: AdminArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Admin', name, {}, opts);
    const { fn } = createServiceFunction(
      name,
      {
        ...functionArgs(args),
        description: 'Lanyard administration (invoked by lanyard-admin --stack; IAM only)',
        memoryMb: 512,
        timeoutSeconds: 60,
        reservedConcurrency: 2,
      },
      this,
    );
    this.functionName = fn.name;
    this.functionArn = fn.arn;
    this.registerOutputs({ functionName: this.functionName, functionArn: this.functionArn });
  }
}
