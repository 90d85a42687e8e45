// Retention: the function that purges expired rows (the maintenance bundle's `prune` handler), run
// by an EventBridge schedule. Its own role reads only the database secret; the only resource
// policy lets this one rule invoke it (events.amazonaws.com, scoped by the rule's ARN).
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import { createServiceFunction, type FunctionArgs, functionArgs } from './service-function';

export const PRUNE_TIMEOUT_SECONDS = 300;

export interface RetentionArgs extends FunctionArgs {
  /** EventBridge schedule expression, e.g. rate(1 hour). */
  schedule: string;
}

export class Retention extends pulumi.ComponentResource {
  readonly functionName: pulumi.Output<string>;
  readonly ruleArn: pulumi.Output<string>;

  constructor(name: string, args: RetentionArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Retention', name, {}, opts);
    const { fn } = createServiceFunction(
      name,
      {
        ...functionArgs(args),
        description: 'Lanyard retention: purges expired sessions, codes, tokens and rate-limit rows (scheduled)',
        handler: 'index.prune',
        memoryMb: 256,
        timeoutSeconds: PRUNE_TIMEOUT_SECONDS,
        // One at a time: a slow run is never joined by the next tick.
        reservedConcurrency: 1,
      },
      this,
    );

    const rule = new aws.cloudwatch.EventRule(
      `${name}-schedule`,
      {
        name: args.functionName,
        description: `Runs ${args.functionName} (${args.schedule})`,
        scheduleExpression: args.schedule,
        tags: args.tags,
      },
      { parent: this },
    );
    const permission = new aws.lambda.Permission(
      `${name}-invoke`,
      {
        action: 'lambda:InvokeFunction',
        function: fn.name,
        principal: 'events.amazonaws.com',
        sourceArn: rule.arn,
      },
      { parent: this },
    );
    new aws.cloudwatch.EventTarget(
      `${name}-target`,
      { rule: rule.name, targetId: 'prune', arn: fn.arn },
      { parent: this, dependsOn: [permission] },
    );

    this.functionName = fn.name;
    this.ruleArn = rule.arn;
    this.registerOutputs({ functionName: this.functionName, ruleArn: this.ruleArn });
  }
}
