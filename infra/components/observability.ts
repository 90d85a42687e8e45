// Observability: the alarm topic (optionally mailed) and the alarms — Lambda errors, throttles
// and duration for each function, API 5xx, RDS CPU, free storage and connections. (Log groups
// with retention are made by each function's component, before the function.)
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';

export interface ObservedFunction {
  name: pulumi.Input<string>;
  timeoutSeconds: number;
}

export interface ObservabilityArgs {
  namePrefix: string;
  functions: Record<string, ObservedFunction>;
  apiId: pulumi.Input<string>;
  dbInstanceIdentifier: pulumi.Input<string>;
  /** Alarm when connections exceed 80% of this. */
  dbMaxConnections?: number;
  /** Alarm when free storage falls below this (bytes). */
  dbFreeStorageBytes: number;
  alarmEmail?: string;
  tags: Record<string, string>;
}

export class Observability extends pulumi.ComponentResource {
  readonly alarmTopicArn: pulumi.Output<string>;
  readonly alarmNames: pulumi.Output<string>[] = [];

  constructor(name: string, args: ObservabilityArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Observability', name, {}, opts);
    const parent = { parent: this };
    const topic = new aws.sns.Topic(
      `${name}-alarms`,
      { namePrefix: `${args.namePrefix}-alarms-`, tags: args.tags },
      parent,
    );
    if (args.alarmEmail) {
      new aws.sns.TopicSubscription(
        `${name}-alarms-email`,
        { topic: topic.arn, protocol: 'email', endpoint: args.alarmEmail },
        parent,
      );
    }
    const alarm = (
      suffix: string,
      props: Omit<aws.cloudwatch.MetricAlarmArgs, 'alarmActions' | 'okActions' | 'name'>,
    ) => {
      const a = new aws.cloudwatch.MetricAlarm(
        `${name}-${suffix}`,
        {
          name: `${args.namePrefix}-${suffix}`,
          alarmActions: [topic.arn],
          okActions: [topic.arn],
          treatMissingData: 'notBreaching',
          tags: args.tags,
          ...props,
        },
        parent,
      );
      this.alarmNames.push(a.name);
      return a;
    };

    for (const [key, fn] of Object.entries(args.functions)) {
      const dimensions = { FunctionName: fn.name };
      alarm(`${key}-errors`, {
        namespace: 'AWS/Lambda',
        metricName: 'Errors',
        dimensions,
        statistic: 'Sum',
        period: 300,
        evaluationPeriods: 1,
        threshold: 1,
        comparisonOperator: 'GreaterThanOrEqualToThreshold',
        alarmDescription: `The ${key} function raised errors`,
      });
      alarm(`${key}-throttles`, {
        namespace: 'AWS/Lambda',
        metricName: 'Throttles',
        dimensions,
        statistic: 'Sum',
        period: 300,
        evaluationPeriods: 1,
        threshold: 1,
        comparisonOperator: 'GreaterThanOrEqualToThreshold',
        alarmDescription: `The ${key} function was throttled (reserved concurrency reached)`,
      });
      alarm(`${key}-duration`, {
        namespace: 'AWS/Lambda',
        metricName: 'Duration',
        dimensions,
        extendedStatistic: 'p99',
        period: 300,
        evaluationPeriods: 3,
        threshold: fn.timeoutSeconds * 1000 * 0.8,
        comparisonOperator: 'GreaterThanThreshold',
        alarmDescription: `The ${key} function's p99 duration is above 80% of its timeout`,
      });
    }

    alarm('api-5xx', {
      namespace: 'AWS/ApiGateway',
      metricName: '5xx',
      dimensions: { ApiId: args.apiId, Stage: '$default' },
      statistic: 'Sum',
      period: 300,
      evaluationPeriods: 1,
      threshold: 5,
      comparisonOperator: 'GreaterThanOrEqualToThreshold',
      alarmDescription: 'The API answered 5xx responses',
    });

    const db = { DBInstanceIdentifier: args.dbInstanceIdentifier };
    alarm('db-cpu', {
      namespace: 'AWS/RDS',
      metricName: 'CPUUtilization',
      dimensions: db,
      statistic: 'Average',
      period: 300,
      evaluationPeriods: 3,
      threshold: 80,
      comparisonOperator: 'GreaterThanThreshold',
      alarmDescription: 'Database CPU above 80% for 15 minutes',
    });
    alarm('db-free-storage', {
      namespace: 'AWS/RDS',
      metricName: 'FreeStorageSpace',
      dimensions: db,
      statistic: 'Minimum',
      period: 300,
      evaluationPeriods: 1,
      threshold: args.dbFreeStorageBytes,
      comparisonOperator: 'LessThanThreshold',
      alarmDescription: 'Database free storage is low',
    });
    alarm('db-connections', {
      namespace: 'AWS/RDS',
      metricName: 'DatabaseConnections',
      dimensions: db,
      statistic: 'Maximum',
      period: 300,
      evaluationPeriods: 1,
      threshold: Math.floor((args.dbMaxConnections ?? 100) * 0.8),
      comparisonOperator: 'GreaterThanThreshold',
      alarmDescription: 'Database connections above 80% of max_connections',
    });

    this.alarmTopicArn = topic.arn;
    this.registerOutputs({ alarmTopicArn: this.alarmTopicArn });
  }
}
