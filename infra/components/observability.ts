// Observability: the alarm topic (optionally mailed) and the alarms — Lambda errors, throttles
// and duration for each function, API 4xx and 5xx, surges of the app's own 429s (a metric filter
// on the API function's JSON log lines), WAF blocks on the `waf` edge, RDS CPU, free storage and
// connections, and with mail, failed outbox messages and newly suppressed addresses (metric filters
// of the mail component). (Log groups with retention are made by each function's component.)
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';

export interface ObservedFunction {
  name: pulumi.Input<string>;
  timeoutSeconds: number;
}

export interface ObservabilityArgs {
  namePrefix: string;
  functions: Record<string, ObservedFunction>;
  /** The API's CloudWatch metrics: names and dimensions differ between HTTP and REST APIs. */
  apiMetrics: ApiMetrics;
  /** The API function's log group: its JSON request lines carry res.statusCode. */
  apiLogGroupName: pulumi.Input<string>;
  /** The `waf` edge's web ACL metric dimensions, when there is one. */
  waf?: { webAclName: pulumi.Input<string>; region: pulumi.Input<string> };
  /** Alarm thresholds per 5 minutes. */
  api4xxPer5Min?: number;
  rateLimitedPer5Min?: number;
  dbInstanceIdentifier: pulumi.Input<string>;
  /** Alarm when connections exceed 80% of this. */
  dbMaxConnections?: number;
  /** Alarm when free storage falls below this (bytes). */
  dbFreeStorageBytes: number;
  alarmEmail?: string;
  /** The mail path's metrics (infra/components/mail.ts), when there is one, and their thresholds. */
  mail?: {
    namespace: string;
    failed: string;
    suppressed: string;
    /** Failed messages in 15 minutes. */
    failedThreshold: number;
    /** Newly suppressed addresses in a day. */
    suppressedThreshold: number;
  };
  tags: Record<string, string>;
}

export interface ApiMetrics {
  namespace: 'AWS/ApiGateway';
  clientErrors: string;
  serverErrors: string;
  dimensions: Record<string, pulumi.Input<string>>;
}

/** A 4xx surge: guessing, scanning, a broken client (normal traffic stays far below). */
export const API_4XX_PER_5_MIN = 500;
/** App-level 429s (the per-address credential limit): someone is guessing passwords. */
export const RATE_LIMITED_PER_5_MIN = 20;
/** Matches the app's request-completed lines with status 429 (pino JSON: {"res":{"statusCode":429}}). */
export const RATE_LIMITED_PATTERN = '{ $.res.statusCode = 429 }';

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

    alarm('api-4xx', {
      namespace: args.apiMetrics.namespace,
      metricName: args.apiMetrics.clientErrors,
      dimensions: args.apiMetrics.dimensions,
      statistic: 'Sum',
      period: 300,
      evaluationPeriods: 1,
      threshold: args.api4xxPer5Min ?? API_4XX_PER_5_MIN,
      comparisonOperator: 'GreaterThanOrEqualToThreshold',
      alarmDescription: 'A surge of 4xx answers (guessing, scanning or a broken client)',
    });

    const rateLimitedNamespace = `Lanyard/${args.namePrefix}`;
    new aws.cloudwatch.LogMetricFilter(
      `${name}-rate-limited`,
      {
        name: `${args.namePrefix}-rate-limited`,
        logGroupName: args.apiLogGroupName,
        pattern: RATE_LIMITED_PATTERN,
        metricTransformation: { name: 'RateLimited', namespace: rateLimitedNamespace, value: '1', unit: 'Count' },
      },
      parent,
    );
    alarm('api-429', {
      namespace: rateLimitedNamespace,
      metricName: 'RateLimited',
      dimensions: {},
      statistic: 'Sum',
      period: 300,
      evaluationPeriods: 1,
      threshold: args.rateLimitedPer5Min ?? RATE_LIMITED_PER_5_MIN,
      comparisonOperator: 'GreaterThanOrEqualToThreshold',
      alarmDescription: 'A surge of 429s from the per-address credential limit (password guessing)',
    });

    if (args.mail) {
      alarm('mail-failed', {
        namespace: args.mail.namespace,
        metricName: args.mail.failed,
        dimensions: {},
        statistic: 'Sum',
        period: 900,
        evaluationPeriods: 1,
        threshold: args.mail.failedThreshold,
        comparisonOperator: 'GreaterThanOrEqualToThreshold',
        alarmDescription: 'Outbox messages failed for good (`lanyard-admin mail list --status failed`)',
      });
      alarm('mail-suppressed', {
        namespace: args.mail.namespace,
        metricName: args.mail.suppressed,
        dimensions: {},
        statistic: 'Sum',
        period: 86400,
        evaluationPeriods: 1,
        threshold: args.mail.suppressedThreshold,
        comparisonOperator: 'GreaterThanOrEqualToThreshold',
        alarmDescription:
          'Many addresses bounced or complained in a day (`lanyard-admin mail suppressions list`): a reputation risk',
      });
    }

    if (args.waf) {
      alarm('waf-blocked', {
        namespace: 'AWS/WAFV2',
        metricName: 'BlockedRequests',
        dimensions: { WebACL: args.waf.webAclName, Region: args.waf.region, Rule: 'ALL' },
        statistic: 'Sum',
        period: 300,
        evaluationPeriods: 1,
        threshold: 100,
        comparisonOperator: 'GreaterThanOrEqualToThreshold',
        alarmDescription: "WAF's rate-based rules blocked client addresses",
      });
    }

    alarm('api-5xx', {
      namespace: args.apiMetrics.namespace,
      metricName: args.apiMetrics.serverErrors,
      dimensions: args.apiMetrics.dimensions,
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
