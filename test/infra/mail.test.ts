// lanyard:mailDomain under mocks: the SES identity (Easy DKIM, MAIL FROM), the configuration set,
// and the way from the isolated VPC to SES without a NAT gateway: a relay in the VPC hands
// messages to SQS through an interface endpoint; a sender outside the VPC sends them with SES,
// allowed exactly that identity and configuration set. No wildcard anywhere.
import { beforeAll, describe, expect, it } from 'vitest';
import type { PolicyDocument } from '../../infra/policies';
import { findPolicyProblems } from './policy-problems';
import { type LoadedStack, loadStack } from './stack-under-mocks';

let stack: LoadedStack;
beforeAll(async () => {
  stack = await loadStack({ 'lanyard:mailDomain': 'id.example.org' });
});

const IDENTITY = 'arn:aws:ses:eu-west-1:123456789012:identity/id.example.org';
const CONFIG_SET = 'arn:aws:ses:eu-west-1:123456789012:configuration-set/lanyard-prod-mail';
const QUEUE = 'arn:aws:sqs:eu-west-1:123456789012:lanyard-prod-mail';
const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/lanyard-prod-mail';
const policyOf = (name: string) =>
  JSON.parse(stack.one('aws:iam/rolePolicy:RolePolicy', name).inputs.policy) as PolicyDocument;

describe('SES', () => {
  it('a domain identity with Easy DKIM (2048-bit), MAIL FROM mail.<domain>, in the configuration set', () => {
    expect(stack.one('aws:sesv2/emailIdentity:EmailIdentity').inputs).toMatchObject({
      emailIdentity: 'id.example.org',
      configurationSetName: 'lanyard-prod-mail',
      dkimSigningAttributes: { nextSigningKeyLength: 'RSA_2048_BIT' },
    });
    expect(stack.one('aws:sesv2/emailIdentityMailFromAttributes:EmailIdentityMailFromAttributes').inputs).toMatchObject(
      {
        emailIdentity: 'id.example.org',
        mailFromDomain: 'mail.id.example.org',
      },
    );
    expect(stack.one('aws:sesv2/configurationSet:ConfigurationSet').inputs).toMatchObject({
      configurationSetName: 'lanyard-prod-mail',
      deliveryOptions: { tlsPolicy: 'REQUIRE' },
      suppressionOptions: { suppressedReasons: ['BOUNCE', 'COMPLAINT'] },
    });
  });

  it('exports the DNS records to create: three DKIM CNAMEs, the MAIL FROM MX and its SPF', () => {
    expect(stack.outputs.mailDnsRecords).toEqual([
      { type: 'CNAME', name: 'tok1._domainkey.id.example.org', value: 'tok1.dkim.amazonses.com' },
      { type: 'CNAME', name: 'tok2._domainkey.id.example.org', value: 'tok2.dkim.amazonses.com' },
      { type: 'CNAME', name: 'tok3._domainkey.id.example.org', value: 'tok3.dkim.amazonses.com' },
      { type: 'MX', name: 'mail.id.example.org', value: '10 feedback-smtp.eu-west-1.amazonses.com' },
      { type: 'TXT', name: 'mail.id.example.org', value: '"v=spf1 include:amazonses.com ~all"' },
    ]);
    expect(stack.outputs.mailQueueUrl).toBe(QUEUE_URL);
  });
});

describe('from the VPC to SES without a NAT gateway', () => {
  it('adds no internet gateway, NAT gateway, elastic IP or route', () => {
    expect(stack.byType('aws:ec2/natGateway:NatGateway')).toHaveLength(0);
    expect(stack.byType('aws:ec2/internetGateway:InternetGateway')).toHaveLength(0);
    expect(stack.byType('aws:ec2/eip:Eip')).toHaveLength(0);
    expect(stack.byType('aws:ec2/route:Route')).toHaveLength(0);
  });

  it('reaches SQS through an interface endpoint (private DNS) that allows only SendMessage to the hand-off queue', () => {
    const endpoint = stack.one('aws:ec2/vpcEndpoint:VpcEndpoint', 'mail-sqs-endpoint');
    expect(endpoint.inputs).toMatchObject({
      serviceName: 'com.amazonaws.eu-west-1.sqs',
      vpcEndpointType: 'Interface',
      privateDnsEnabled: true,
      subnetIds: ['network-isolated-0-id', 'network-isolated-1-id'],
      securityGroupIds: ['network-endpoints-id'],
    });
    const policy = JSON.parse(
      stack.one('aws:ec2/vpcEndpointPolicy:VpcEndpointPolicy', 'mail-sqs-endpoint-policy').inputs.policy,
    );
    expect(policy.Statement).toEqual([
      {
        Sid: 'OnlyTheHandOffQueue',
        Effect: 'Allow',
        Principal: { AWS: 'arn:aws:iam::123456789012:root' },
        Action: ['sqs:SendMessage'],
        Resource: [QUEUE],
      },
    ]);
    // No SES endpoint: SES's VPC endpoint is SMTP only.
    const services = stack.byType('aws:ec2/vpcEndpoint:VpcEndpoint').map((e) => e.inputs.serviceName);
    expect(services.sort()).toEqual(['com.amazonaws.eu-west-1.secretsmanager', 'com.amazonaws.eu-west-1.sqs']);
  });

  it('the relay runs in the isolated subnets and may only put messages on the queue', () => {
    const relay = stack.one('aws:lambda/function:Function', 'mail-relay-fn').inputs;
    expect(relay.vpcConfig).toEqual({
      subnetIds: ['network-isolated-0-id', 'network-isolated-1-id'],
      securityGroupIds: ['network-functions-id'],
    });
    expect(relay.handler).toBe('index.relayMail');
    expect(relay.reservedConcurrentExecutions).toBe(1);
    expect(relay.environment.variables).toMatchObject({
      MAIL_URL: 'ses',
      MAIL_HANDOFF_QUEUE_URL: QUEUE_URL,
      MAIL_FROM: 'Lanyard <noreply@id.example.org>',
    });
    expect(policyOf('mail-relay-hand-off').Statement).toEqual([
      { Sid: 'HandOffMail', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: [QUEUE] },
    ]);
    expect(stack.one('aws:cloudwatch/eventRule:EventRule', 'mail-relay-schedule').inputs.scheduleExpression).toBe(
      'rate(1 minute)',
    );
  });

  it('the sender runs outside the VPC, consumes the queue, and may send only as the identity through the configuration set', () => {
    const sender = stack.one('aws:lambda/function:Function', 'mail-sender-fn').inputs;
    expect(sender.vpcConfig).toBeUndefined();
    expect(sender.environment.variables).toEqual({
      NODE_ENV: 'production',
      MAIL_URL: 'ses',
      MAIL_SES_CONFIGURATION_SET: 'lanyard-prod-mail',
      // The default 14/s shared by the default 2 instances.
      MAIL_SEND_RATE: '7',
      LOG_LEVEL: 'info',
    });
    const policy = policyOf('mail-sender-policy');
    expect(policy.Statement).toEqual([
      {
        Sid: 'OwnLogs',
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: ['arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/lanyard-prod-mail-sender:*'],
      },
      {
        Sid: 'ConsumeHandOffQueue',
        Effect: 'Allow',
        Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes'],
        Resource: [QUEUE],
      },
      {
        Sid: 'SendAsTheIdentity',
        Effect: 'Allow',
        Action: ['ses:SendEmail', 'ses:SendRawEmail'],
        Resource: [IDENTITY, CONFIG_SET],
      },
    ]);
    expect(findPolicyProblems(policy)).toEqual([]);
    expect(stack.one('aws:lambda/eventSourceMapping:EventSourceMapping').inputs).toMatchObject({
      eventSourceArn: QUEUE,
      functionName: 'lanyard-prod-mail-sender',
      functionResponseTypes: ['ReportBatchItemFailures'],
      scalingConfig: { maximumConcurrency: 2 },
    });
  });

  it('no statement of any role grants a wildcard action or an SES/SQS action on "*"', () => {
    for (const p of stack.byType('aws:iam/rolePolicy:RolePolicy')) {
      const doc = JSON.parse(p.inputs.policy) as PolicyDocument;
      expect(findPolicyProblems(doc), p.name).toEqual([]);
      for (const s of doc.Statement) {
        const actions = ([] as string[]).concat(s.Action);
        const resources = ([] as string[]).concat(s.Resource ?? []);
        expect(
          actions.some((a) => a.includes('*')),
          p.name,
        ).toBe(false);
        if (actions.some((a) => /^(ses|sqs):/.test(a)))
          expect(
            resources.some((r) => r.includes('*')),
            p.name,
          ).toBe(false);
      }
    }
  });

  it('the admin function (`mail test --stack`) hands off like the relay, allowed SendMessage only', () => {
    expect(stack.one('aws:lambda/function:Function', 'admin-fn').inputs.environment.variables).toMatchObject({
      MAIL_URL: 'ses',
      MAIL_HANDOFF_QUEUE_URL: QUEUE_URL,
      MAIL_FROM: 'Lanyard <noreply@id.example.org>',
    });
    expect(policyOf('admin-mail-hand-off').Statement).toEqual([
      { Sid: 'HandOffMail', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: [QUEUE] },
    ]);
  });

  it('the API writes From noreply@ the mail domain', () => {
    expect(stack.one('aws:lambda/function:Function', 'api-fn').inputs.environment.variables.MAIL_FROM).toBe(
      'Lanyard <noreply@id.example.org>',
    );
  });
});
