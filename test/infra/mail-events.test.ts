// lanyard:mailDomain under mocks, the way back from SES: the configuration set publishes bounces and
// complaints (only those) to an SNS topic only SES may publish to, for this configuration set; the
// topic invokes the events function (in the VPC, its own role: its logs, network interfaces and
// the app role's secret, nothing else); metric filters feed the failed and suppressed alarms. The
// send rate is shared by the sender instances. No secret value in any input (Pulumi state).
import { beforeAll, describe, expect, it } from 'vitest';
import type { PolicyDocument } from '../../infra/policies';
import { findPolicyProblems } from './policy-problems';
import { type LoadedStack, loadStack } from './stack-under-mocks';

let stack: LoadedStack;
beforeAll(async () => {
  stack = await loadStack({
    'lanyard:mailDomain': 'id.example.org',
    'lanyard:mailSendRate': '50',
    'lanyard:mailSenderConcurrency': '3',
    'lanyard:mailSuppressedAlarm': '25',
  });
});

/** The mocks make an SNS ARN from the resource's logical name. */
const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:mail-eventstopic';
const CONFIG_SET = 'arn:aws:ses:eu-west-1:123456789012:configuration-set/lanyard-prod-mail';
const APP_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/app-db-AbCdEf';

describe('bounces and complaints: SES → SNS → the events function', () => {
  it('the configuration set publishes only BOUNCE and COMPLAINT events to the topic', () => {
    expect(stack.one('aws:sesv2/configurationSetEventDestination:ConfigurationSetEventDestination').inputs).toEqual({
      configurationSetName: 'lanyard-prod-mail',
      eventDestinationName: 'bounces-and-complaints',
      eventDestination: {
        enabled: true,
        matchingEventTypes: ['BOUNCE', 'COMPLAINT'],
        snsDestination: { topicArn: TOPIC },
      },
    });
    expect(stack.outputs.mailEventsTopicArn).toBe(TOPIC);
    expect(stack.one('aws:sns/topic:Topic', 'mail-events').inputs.name).toBe('lanyard-prod-mail-events');
  });

  it('only SES may publish to the topic, and only for this account and configuration set', () => {
    const policy = JSON.parse(stack.one('aws:sns/topicPolicy:TopicPolicy', 'mail-events-policy').inputs.policy);
    expect(policy).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Sid: 'SesPublishesThisConfigurationSet',
          Effect: 'Allow',
          Principal: { Service: 'ses.amazonaws.com' },
          Action: ['sns:Publish'],
          Resource: [TOPIC],
          Condition: {
            StringEquals: { 'AWS:SourceAccount': '123456789012' },
            ArnLike: { 'AWS:SourceArn': CONFIG_SET },
          },
        },
      ],
    });
  });

  it('the topic invokes the events function, and nothing else may', () => {
    const fn = stack.one('aws:lambda/function:Function', 'mail-events-fn').inputs;
    expect(fn).toMatchObject({
      name: 'lanyard-prod-mail-events',
      handler: 'index.recordMailEvents',
      reservedConcurrentExecutions: 2,
      vpcConfig: {
        subnetIds: ['network-isolated-0-id', 'network-isolated-1-id'],
        securityGroupIds: ['network-functions-id'],
      },
    });
    expect(stack.one('aws:sns/topicSubscription:TopicSubscription', 'mail-events-subscription').inputs).toEqual({
      topic: TOPIC,
      protocol: 'lambda',
      endpoint: 'arn:aws:lambda:eu-west-1:123456789012:function:lanyard-prod-mail-events',
    });
    expect(stack.one('aws:lambda/permission:Permission', 'mail-events-invoke').inputs).toEqual({
      action: 'lambda:InvokeFunction',
      function: 'lanyard-prod-mail-events',
      principal: 'sns.amazonaws.com',
      sourceArn: TOPIC,
    });
  });

  it('its role: its own logs, the VPC network interfaces and the app role secret only', () => {
    const policy = JSON.parse(
      stack.one('aws:iam/rolePolicy:RolePolicy', 'mail-events-policy').inputs.policy,
    ) as PolicyDocument;
    expect(policy.Statement.map((s) => s.Sid)).toEqual(['OwnLogs', 'VpcNetworkInterfaces', 'ReadSecrets']);
    expect(policy.Statement[0].Resource).toEqual([
      'arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/lanyard-prod-mail-events:*',
    ]);
    expect(policy.Statement[2]).toEqual({
      Sid: 'ReadSecrets',
      Effect: 'Allow',
      Action: ['secretsmanager:GetSecretValue'],
      Resource: [APP_SECRET],
    });
    expect(findPolicyProblems(policy)).toEqual([]);
    const actions = policy.Statement.flatMap((s) => [s.Action].flat());
    expect(actions.filter((a) => /^(ses|sns|sqs|cloudwatch):/.test(a))).toEqual([]);
  });

  it('its environment names the database and the secret ARN, never a secret value', () => {
    const env = stack.one('aws:lambda/function:Function', 'mail-events-fn').inputs.environment.variables;
    expect(Object.keys(env).sort()).toEqual([
      'DB_HOST',
      'DB_NAME',
      'DB_PORT',
      'DB_SECRET_ARN',
      'LOG_LEVEL',
      'NODE_ENV',
    ]);
    expect(env.DB_SECRET_ARN).toBe(APP_SECRET);
  });
});

describe('the send rate and the alarms', () => {
  it('the account rate is shared by the sender instances', () => {
    expect(
      stack.one('aws:lambda/function:Function', 'mail-sender-fn').inputs.environment.variables.MAIL_SEND_RATE,
    ).toBe('16.666');
    expect(stack.one('aws:lambda/eventSourceMapping:EventSourceMapping').inputs.scalingConfig).toEqual({
      maximumConcurrency: 3,
    });
  });

  it('metric filters on the relay and events log lines feed the failed and suppressed alarms', () => {
    expect(stack.one('aws:cloudwatch/logMetricFilter:LogMetricFilter', 'mail-failed-metric').inputs).toEqual({
      name: 'lanyard-prod-mail-failed',
      logGroupName: '/aws/lambda/lanyard-prod-mail-relay',
      pattern: '{ $.msg = "mail: relayed" && $.failed > 0 }',
      metricTransformation: {
        name: 'MailFailedMessages',
        namespace: 'Lanyard/lanyard-prod',
        value: '$.failed',
        unit: 'Count',
      },
    });
    expect(stack.one('aws:cloudwatch/logMetricFilter:LogMetricFilter', 'mail-suppressed-metric').inputs).toEqual({
      name: 'lanyard-prod-mail-suppressed',
      logGroupName: '/aws/lambda/lanyard-prod-mail-events',
      pattern: '{ $.msg = "mail: suppressed" }',
      metricTransformation: {
        name: 'MailSuppressedAddresses',
        namespace: 'Lanyard/lanyard-prod',
        value: '1',
        unit: 'Count',
      },
    });
    const failed = stack.one('aws:cloudwatch/metricAlarm:MetricAlarm', 'observability-mail-failed').inputs;
    expect(failed).toMatchObject({
      name: 'lanyard-prod-mail-failed',
      namespace: 'Lanyard/lanyard-prod',
      metricName: 'MailFailedMessages',
      statistic: 'Sum',
      period: 900,
      threshold: 1,
      comparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    const suppressed = stack.one('aws:cloudwatch/metricAlarm:MetricAlarm', 'observability-mail-suppressed').inputs;
    expect(suppressed).toMatchObject({
      name: 'lanyard-prod-mail-suppressed',
      metricName: 'MailSuppressedAddresses',
      period: 86400,
      threshold: 25,
    });
    expect(suppressed.alarmActions).toEqual(failed.alarmActions);
    expect(failed.alarmActions).toHaveLength(1);
  });
});
