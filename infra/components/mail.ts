// Mail: Amazon SES sending for one domain, and the path from the outbox to SES without a NAT
// gateway. The outbox lives in the database, inside isolated subnets; SES's API has no VPC
// endpoint (SES's VPC endpoint serves SMTP only, with long-lived SMTP credentials), so:
//   relay (in the VPC, scheduled)  ──SendMessage via the SQS interface endpoint──▶  hand-off queue
//   hand-off queue  ──event source──▶  sender (outside the VPC, no database)  ──SendEmail──▶  SES
// The relay drains the outbox (service/lambda-migrate.ts `relayMail`); the sender
// (service/aws/mail-sender-handler.ts) sends each message's raw bytes as the domain identity
// through the configuration set, and SQS redelivers until SES takes it, then dead-letters it.
// Bounces and complaints come back the other way: configuration set event destination → SNS topic
// → the events function (in the VPC, service/aws/mail-events-handler.ts), which suppresses the
// addresses. Two metric filters count failed messages (the relay's log line) and new suppressions
// (the events function's log line) for the alarms in Observability.
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import { senderInstanceRate } from '../budget';
import { functionLogGroupName } from '../names';
import {
  lambdaAssumeRolePolicy,
  mailDnsRecords,
  mailEventsTopicPolicy,
  mailHandOffPolicy,
  mailSenderPolicy,
  sqsEndpointPolicy,
} from '../policies';
import { createServiceFunction, type FunctionArgs, functionArgs, RUNTIME, ARCHITECTURE } from './service-function';

export const RELAY_TIMEOUT_SECONDS = 60;
export const SENDER_TIMEOUT_SECONDS = 30;
export const EVENTS_TIMEOUT_SECONDS = 30;
/** The relay's round total (service/lambda-migrate.ts relayMail): failed messages in that run. */
export const FAILED_PATTERN = '{ $.msg = "mail: relayed" && $.failed > 0 }';
/** One line per newly suppressed address (service/aws/mail-events-handler.ts). */
export const SUPPRESSED_PATTERN = '{ $.msg = "mail: suppressed" }';

export interface MailArgs extends FunctionArgs {
  /** lanyard:mailDomain: the SES identity; MAIL FROM is mail.<domain>. */
  domain: string;
  namePrefix: string;
  vpcId: pulumi.Input<string>;
  /** The interface endpoints' security group (HTTPS from the functions). */
  endpointSecurityGroupId: pulumi.Input<string>;
  /** The sender function's name and bundle (dist/lambda/mail). */
  senderFunctionName: string;
  senderBundleDir: string;
  /** How often the relay drains the outbox (EventBridge), default rate(1 minute). */
  schedule?: string;
  /** The bounce and complaint function's name (handler index.recordMailEvents of the relay's bundle). */
  eventsFunctionName: string;
  /** The SES account's maximum send rate (messages a second), shared by the sender instances. */
  sendRate: number;
  /** The hand-off queue's maximum concurrency: sender instances at once (≥ 2). */
  senderConcurrency: number;
  /**
   * What the relay alone gets on top of `environment` and `readSecretArns`: it signs back-channel
   * logout tokens (the signing keys' secret, PUBLIC_URL as iss). The events function does not.
   */
  relayEnvironment?: Record<string, pulumi.Input<string>>;
  relayReadSecretArns?: pulumi.Input<string>[];
}

export class Mail extends pulumi.ComponentResource {
  readonly identityArn: pulumi.Output<string>;
  readonly configurationSetName: pulumi.Output<string>;
  readonly queueUrl: pulumi.Output<string>;
  readonly queueArn: pulumi.Output<string>;
  readonly relayFunctionName: pulumi.Output<string>;
  readonly senderFunctionName: pulumi.Output<string>;
  readonly eventsFunctionName: pulumi.Output<string>;
  readonly eventsTopicArn: pulumi.Output<string>;
  /** The custom metrics the alarms watch (metric filters; namespace `Lanyard/<prefix>`, like RateLimited). */
  readonly metrics: { namespace: string; failed: string; suppressed: string };
  /** The records to create at the domain's DNS host: DKIM CNAMEs, the MAIL FROM MX and SPF. */
  readonly dnsRecords: pulumi.Output<{ type: string; name: string; value: string }[]>;

  constructor(name: string, args: MailArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Mail', name, {}, opts);
    const parent = { parent: this };
    const region = aws.getRegionOutput({}, parent).region;
    const account = aws.getCallerIdentityOutput({}, parent).accountId;
    const mailFromDomain = `mail.${args.domain}`;
    this.metrics = {
      namespace: `Lanyard/${args.namePrefix}`,
      failed: 'MailFailedMessages',
      suppressed: 'MailSuppressedAddresses',
    };

    const configurationSet = new aws.sesv2.ConfigurationSet(
      `${name}-config`,
      {
        configurationSetName: `${args.namePrefix}-mail`,
        deliveryOptions: { tlsPolicy: 'REQUIRE' },
        reputationOptions: { reputationMetricsEnabled: true },
        sendingOptions: { sendingEnabled: true },
        suppressionOptions: { suppressedReasons: ['BOUNCE', 'COMPLAINT'] },
        tags: args.tags,
      },
      parent,
    );
    const identity = new aws.sesv2.EmailIdentity(
      `${name}-identity`,
      {
        emailIdentity: args.domain,
        configurationSetName: configurationSet.configurationSetName,
        // Easy DKIM: SES holds the key and signs; we publish its three CNAMEs.
        dkimSigningAttributes: { nextSigningKeyLength: 'RSA_2048_BIT' },
        tags: args.tags,
      },
      parent,
    );
    new aws.sesv2.EmailIdentityMailFromAttributes(
      `${name}-mail-from`,
      { emailIdentity: identity.emailIdentity, mailFromDomain, behaviorOnMxFailure: 'USE_DEFAULT_VALUE' },
      parent,
    );

    const deadLetters = new aws.sqs.Queue(
      `${name}-dead-letters`,
      {
        name: `${args.namePrefix}-mail-dead-letters`,
        messageRetentionSeconds: 14 * 86400,
        sqsManagedSseEnabled: true,
        tags: args.tags,
      },
      parent,
    );
    const queue = new aws.sqs.Queue(
      `${name}-hand-off`,
      {
        name: `${args.namePrefix}-mail`,
        sqsManagedSseEnabled: true,
        visibilityTimeoutSeconds: SENDER_TIMEOUT_SECONDS * 6,
        messageRetentionSeconds: 4 * 86400,
        redrivePolicy: deadLetters.arn.apply((arn) => JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: 8 })),
        tags: args.tags,
      },
      parent,
    );

    // SQS from inside the VPC without a NAT gateway: an interface endpoint, private DNS, and a
    // policy that lets nothing through but SendMessage to this queue.
    const endpoint = new aws.ec2.VpcEndpoint(
      `${name}-sqs-endpoint`,
      {
        vpcId: args.vpcId,
        serviceName: pulumi.interpolate`com.amazonaws.${region}.sqs`,
        vpcEndpointType: 'Interface',
        privateDnsEnabled: true,
        subnetIds: args.subnetIds,
        securityGroupIds: [args.endpointSecurityGroupId],
        tags: { ...args.tags, Name: `${name}-sqs` },
      },
      parent,
    );
    new aws.ec2.VpcEndpointPolicy(
      `${name}-sqs-endpoint-policy`,
      {
        vpcEndpointId: endpoint.id,
        policy: pulumi
          .all([account, queue.arn])
          .apply(([accountId, queueArn]) => JSON.stringify(sqsEndpointPolicy({ accountId, queueArn }))),
      },
      parent,
    );

    // The relay: in the VPC with the database (the app role's secret only), on a schedule.
    const relay = createServiceFunction(
      `${name}-relay`,
      {
        ...functionArgs(args),
        readSecretArns: [...(args.readSecretArns ?? []), ...(args.relayReadSecretArns ?? [])],
        environment: {
          ...args.environment,
          ...args.relayEnvironment,
          MAIL_URL: 'ses',
          MAIL_HANDOFF_QUEUE_URL: queue.url,
          MAIL_FROM: `Lanyard <noreply@${args.domain}>`,
        },
        description: 'Lanyard mail relay: drains the outbox onto the SES hand-off queue (scheduled)',
        handler: 'index.relayMail',
        memoryMb: 256,
        timeoutSeconds: RELAY_TIMEOUT_SECONDS,
        reservedConcurrency: 1,
      },
      this,
    );
    new aws.iam.RolePolicy(
      `${name}-relay-hand-off`,
      { role: relay.role.id, policy: queue.arn.apply((queueArn) => JSON.stringify(mailHandOffPolicy({ queueArn }))) },
      parent,
    );
    const rule = new aws.cloudwatch.EventRule(
      `${name}-relay-schedule`,
      { name: args.functionName, scheduleExpression: args.schedule ?? 'rate(1 minute)', tags: args.tags },
      parent,
    );
    const permission = new aws.lambda.Permission(
      `${name}-relay-invoke`,
      {
        action: 'lambda:InvokeFunction',
        function: relay.fn.name,
        principal: 'events.amazonaws.com',
        sourceArn: rule.arn,
      },
      parent,
    );
    new aws.cloudwatch.EventTarget(
      `${name}-relay-target`,
      { rule: rule.name, targetId: 'relay', arn: relay.fn.arn },
      { parent: this, dependsOn: [permission] },
    );

    // The sender: outside the VPC (SES's public API), no database, no secret; only SES and the queue.
    const senderLogs = new aws.cloudwatch.LogGroup(
      `${name}-sender-log`,
      { name: functionLogGroupName(args.senderFunctionName), retentionInDays: args.logRetentionDays, tags: args.tags },
      parent,
    );
    const senderRole = new aws.iam.Role(
      `${name}-sender-role`,
      {
        description: `Execution role of ${args.senderFunctionName} only`,
        assumeRolePolicy: JSON.stringify(lambdaAssumeRolePolicy()),
        tags: args.tags,
      },
      parent,
    );
    const senderPolicy = new aws.iam.RolePolicy(
      `${name}-sender-policy`,
      {
        role: senderRole.id,
        policy: pulumi
          .all([senderLogs.arn, queue.arn, identity.arn, configurationSet.arn])
          .apply(([logGroupArn, queueArn, identityArn, configurationSetArn]) =>
            JSON.stringify(mailSenderPolicy({ logGroupArn, queueArn, identityArn, configurationSetArn })),
          ),
      },
      parent,
    );
    const sender = new aws.lambda.Function(
      `${name}-sender-fn`,
      {
        name: args.senderFunctionName,
        description: 'Lanyard mail sender: sends handed-off messages with Amazon SES (outside the VPC)',
        runtime: RUNTIME,
        architectures: [ARCHITECTURE],
        handler: 'index.handler',
        code: new pulumi.asset.FileArchive(args.senderBundleDir),
        memorySize: 256,
        timeout: SENDER_TIMEOUT_SECONDS,
        role: senderRole.arn,
        environment: {
          variables: {
            NODE_ENV: 'production',
            MAIL_URL: 'ses',
            MAIL_SES_CONFIGURATION_SET: configurationSet.configurationSetName,
            // This instance's share of the account's rate (service/mail/send-rate.ts).
            MAIL_SEND_RATE: senderInstanceRate(args.sendRate, args.senderConcurrency),
            LOG_LEVEL: 'info',
          },
        },
        loggingConfig: { logFormat: 'JSON', logGroup: senderLogs.name, systemLogLevel: 'WARN' },
        tags: args.tags,
      },
      { parent: this, dependsOn: [senderPolicy, senderLogs] },
    );
    new aws.lambda.EventSourceMapping(
      `${name}-sender-source`,
      {
        eventSourceArn: queue.arn,
        functionName: sender.name,
        batchSize: 10,
        functionResponseTypes: ['ReportBatchItemFailures'],
        scalingConfig: { maximumConcurrency: args.senderConcurrency },
      },
      parent,
    );

    // Bounces and complaints: the configuration set publishes them to a topic only SES may publish
    // to (for this configuration set), which invokes the events function.
    const eventsTopic = new aws.sns.Topic(
      `${name}-events`,
      { name: `${args.namePrefix}-mail-events`, tags: args.tags },
      parent,
    );
    new aws.sns.TopicPolicy(
      `${name}-events-policy`,
      {
        arn: eventsTopic.arn,
        policy: pulumi
          .all([eventsTopic.arn, account, configurationSet.arn])
          .apply(([topicArn, accountId, configurationSetArn]) =>
            JSON.stringify(mailEventsTopicPolicy({ topicArn, accountId, configurationSetArn })),
          ),
      },
      parent,
    );
    new aws.sesv2.ConfigurationSetEventDestination(
      `${name}-bounces`,
      {
        configurationSetName: configurationSet.configurationSetName,
        eventDestinationName: 'bounces-and-complaints',
        eventDestination: {
          enabled: true,
          matchingEventTypes: ['BOUNCE', 'COMPLAINT'],
          snsDestination: { topicArn: eventsTopic.arn },
        },
      },
      parent,
    );
    // In the VPC with the database (the app role's secret only), like the relay.
    const events = createServiceFunction(
      `${name}-events`,
      {
        ...functionArgs(args),
        functionName: args.eventsFunctionName,
        description: 'Lanyard mail events: SES bounces and complaints (SNS) suppress their addresses',
        handler: 'index.recordMailEvents',
        memoryMb: 256,
        timeoutSeconds: EVENTS_TIMEOUT_SECONDS,
        // Each instance holds a database connection: a handful is plenty for bounce traffic.
        reservedConcurrency: 2,
      },
      this,
    );
    const eventsInvoke = new aws.lambda.Permission(
      `${name}-events-invoke`,
      {
        action: 'lambda:InvokeFunction',
        function: events.fn.name,
        principal: 'sns.amazonaws.com',
        sourceArn: eventsTopic.arn,
      },
      parent,
    );
    new aws.sns.TopicSubscription(
      `${name}-events-subscription`,
      { topic: eventsTopic.arn, protocol: 'lambda', endpoint: events.fn.arn },
      { parent: this, dependsOn: [eventsInvoke] },
    );

    // The alarms' metrics, from the functions' JSON log lines (no PutMetricData permission needed).
    new aws.cloudwatch.LogMetricFilter(
      `${name}-failed-metric`,
      {
        name: `${args.namePrefix}-mail-failed`,
        logGroupName: relay.logGroup.name,
        pattern: FAILED_PATTERN,
        metricTransformation: {
          name: this.metrics.failed,
          namespace: this.metrics.namespace,
          value: '$.failed',
          unit: 'Count',
        },
      },
      parent,
    );
    new aws.cloudwatch.LogMetricFilter(
      `${name}-suppressed-metric`,
      {
        name: `${args.namePrefix}-mail-suppressed`,
        logGroupName: events.logGroup.name,
        pattern: SUPPRESSED_PATTERN,
        metricTransformation: {
          name: this.metrics.suppressed,
          namespace: this.metrics.namespace,
          value: '1',
          unit: 'Count',
        },
      },
      parent,
    );

    this.identityArn = identity.arn;
    this.configurationSetName = configurationSet.configurationSetName;
    this.queueUrl = queue.url;
    this.queueArn = queue.arn;
    this.relayFunctionName = relay.fn.name;
    this.senderFunctionName = sender.name;
    this.eventsFunctionName = events.fn.name;
    this.eventsTopicArn = eventsTopic.arn;
    this.dnsRecords = pulumi
      .all([region, identity.dkimSigningAttributes])
      .apply(([r, dkim]) =>
        mailDnsRecords({ domain: args.domain, mailFromDomain, region: r, dkimTokens: dkim?.tokens ?? [] }),
      );
    this.registerOutputs({
      identityArn: this.identityArn,
      configurationSetName: this.configurationSetName,
      queueUrl: this.queueUrl,
      relayFunctionName: this.relayFunctionName,
      senderFunctionName: this.senderFunctionName,
      eventsFunctionName: this.eventsFunctionName,
      eventsTopicArn: this.eventsTopicArn,
      dnsRecords: this.dnsRecords,
    });
  }
}
