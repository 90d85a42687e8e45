// Admin: the function `lanyard-admin --stack` invokes. IAM-only (lambda:InvokeFunction, audited
// in CloudTrail), no HTTP route and no resource policy, so nothing reaches it from the internet.
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import { mailHandOffPolicy } from '../policies';
import { createServiceFunction, type FunctionArgs, functionArgs } from './service-function';

export interface AdminArgs extends FunctionArgs {
  /** The key ring (`secrets rotate session-key`). */
  writeSecretArns: pulumi.Input<string>[];
  /** With lanyard:mailDomain: `mail test` hands its message to the relay's SQS queue, as the relay does. */
  mailHandOff?: { queueUrl: pulumi.Input<string>; queueArn: pulumi.Input<string>; from: string };
}

export class Admin extends pulumi.ComponentResource {
  readonly functionName: pulumi.Output<string>;
  readonly functionArn: pulumi.Output<string>;

  constructor(name: string, args: AdminArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Admin', name, {}, opts);
    const mail = args.mailHandOff;
    const { fn, role } = createServiceFunction(
      name,
      {
        ...functionArgs(args),
        environment: mail
          ? { ...args.environment, MAIL_URL: 'ses', MAIL_HANDOFF_QUEUE_URL: mail.queueUrl, MAIL_FROM: mail.from }
          : args.environment,
        description: 'Lanyard administration (invoked by lanyard-admin --stack; IAM only)',
        memoryMb: 512,
        timeoutSeconds: 60,
        reservedConcurrency: 2,
      },
      this,
    );
    if (mail) {
      new aws.iam.RolePolicy(
        `${name}-mail-hand-off`,
        {
          role: role.id,
          policy: pulumi.output(mail.queueArn).apply((queueArn) => JSON.stringify(mailHandOffPolicy({ queueArn }))),
        },
        { parent: this },
      );
    }
    this.functionName = fn.name;
    this.functionArn = fn.arn;
    this.registerOutputs({ functionName: this.functionName, functionArn: this.functionArn });
  }
}
