// IAM policy documents for the functions, as plain data: one least-privilege role per function,
// secretsmanager:GetSecretValue on exact ARNs only, no wildcard actions. Pure, so the tests check
// the documents themselves (test/infra/policy-problems.ts is the rule they hold every document to).

export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  /** Absent only in trust policies. */
  Resource?: string | string[];
  Principal?: Record<string, string | string[]>;
  Condition?: Record<string, Record<string, string | string[]>>;
}

export interface PolicyDocument {
  Version: '2012-10-17';
  Statement: PolicyStatement[];
}

export const lambdaAssumeRolePolicy = (): PolicyDocument => ({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }],
});

/**
 * Lambda attaches a VPC function through ENIs it creates with the function's role. These EC2
 * actions support no resource-level scoping for Describe*, so AWS's own managed policy
 * (AWSLambdaVPCAccessExecutionRole) grants them on "*": the one place a "*" resource is allowed.
 */
export const VPC_ENI_ACTIONS = [
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DescribeSubnets',
  'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
];

export interface FunctionPolicyArgs {
  /** The function's own log group ARN. */
  logGroupArn: string;
  /** Secrets the function reads. */
  readSecretArns: string[];
  /** Secrets the function writes (the key ring, for the migration and admin functions). */
  writeSecretArns?: string[];
}

export function functionPolicy(args: FunctionPolicyArgs): PolicyDocument {
  const statements: PolicyStatement[] = [
    // CreateLogGroup is left out on purpose: the group is created by the deploy, with retention.
    {
      Sid: 'OwnLogs',
      Effect: 'Allow',
      Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      Resource: [`${args.logGroupArn}:*`],
    },
    { Sid: 'VpcNetworkInterfaces', Effect: 'Allow', Action: VPC_ENI_ACTIONS, Resource: '*' },
    {
      Sid: 'ReadSecrets',
      Effect: 'Allow',
      Action: ['secretsmanager:GetSecretValue'],
      Resource: [...args.readSecretArns],
    },
  ];
  if (args.writeSecretArns?.length) {
    statements.push({
      Sid: 'WriteKeyRing',
      Effect: 'Allow',
      Action: ['secretsmanager:PutSecretValue'],
      Resource: [...args.writeSecretArns],
    });
  }
  return { Version: '2012-10-17', Statement: statements };
}

/**
 * The Secrets Manager VPC endpoint's policy: through this endpoint, only this account's principals
 * and only Lanyard's secrets (exact ARNs), only the two calls the functions make. A function role
 * that somehow gained wider IAM rights still could not read another secret from inside the VPC.
 */
export function secretsEndpointPolicy(args: { accountId: string; secretArns: string[] }): PolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'LanyardSecretsOnly',
        Effect: 'Allow',
        Principal: { AWS: '*' },
        Action: ['secretsmanager:GetSecretValue', 'secretsmanager:PutSecretValue'],
        Resource: [...args.secretArns],
        Condition: { StringEquals: { 'aws:PrincipalAccount': args.accountId } },
      },
    ],
  };
}

/**
 * The audit bucket's policy: CloudTrail may write this trail's objects (and read the ACL, as it
 * checks before writing), nobody reaches it without TLS. Everything else is denied by default
 * (public access blocked, ACLs disabled by the ownership setting).
 */
export function auditBucketPolicy(args: { bucketArn: string; trailArn: string; accountId: string }): PolicyDocument {
  const fromThisTrail = { StringEquals: { 'aws:SourceArn': args.trailArn } };
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'CloudTrailAclCheck',
        Effect: 'Allow',
        Principal: { Service: 'cloudtrail.amazonaws.com' },
        Action: 's3:GetBucketAcl',
        Resource: args.bucketArn,
        Condition: fromThisTrail,
      },
      {
        Sid: 'CloudTrailWrite',
        Effect: 'Allow',
        Principal: { Service: 'cloudtrail.amazonaws.com' },
        Action: 's3:PutObject',
        Resource: `${args.bucketArn}/AWSLogs/${args.accountId}/*`,
        Condition: { StringEquals: { ...fromThisTrail.StringEquals, 's3:x-amz-acl': 'bucket-owner-full-control' } },
      },
      {
        Sid: 'TlsOnly',
        Effect: 'Deny',
        Principal: { AWS: '*' },
        Action: 's3:*',
        Resource: [args.bucketArn, `${args.bucketArn}/*`],
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      },
    ],
  };
}

/**
 * The mail sender function (outside the VPC): its own logs, the hand-off queue it consumes, and
 * SES sending as the one identity through the one configuration set. SES authorises SendEmail
 * against both the identity and the configuration set, so both ARNs are named; nothing else.
 */
export function mailSenderPolicy(args: {
  logGroupArn: string;
  queueArn: string;
  identityArn: string;
  configurationSetArn: string;
}): PolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'OwnLogs',
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: [`${args.logGroupArn}:*`],
      },
      {
        Sid: 'ConsumeHandOffQueue',
        Effect: 'Allow',
        Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes'],
        Resource: [args.queueArn],
      },
      {
        Sid: 'SendAsTheIdentity',
        Effect: 'Allow',
        Action: ['ses:SendEmail', 'ses:SendRawEmail'],
        Resource: [args.identityArn, args.configurationSetArn],
      },
    ],
  };
}

/** The relay (in the VPC) and the admin function's `mail test`: put messages on the hand-off queue, nothing else. */
export function mailHandOffPolicy(args: { queueArn: string }): PolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [{ Sid: 'HandOffMail', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: [args.queueArn] }],
  };
}

/** The SQS interface endpoint: from this account, only SendMessage to the hand-off queue. */
export function sqsEndpointPolicy(args: { accountId: string; queueArn: string }): PolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'OnlyTheHandOffQueue',
        Effect: 'Allow',
        Principal: { AWS: `arn:aws:iam::${args.accountId}:root` },
        Action: ['sqs:SendMessage'],
        Resource: [args.queueArn],
      },
    ],
  };
}

/**
 * The SES events topic: only SES may publish, and only for this account's configuration set
 * (the confused-deputy conditions AWS recommends for service principals).
 */
export function mailEventsTopicPolicy(args: {
  topicArn: string;
  accountId: string;
  configurationSetArn: string;
}): PolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'SesPublishesThisConfigurationSet',
        Effect: 'Allow',
        Principal: { Service: 'ses.amazonaws.com' },
        Action: ['sns:Publish'],
        Resource: [args.topicArn],
        Condition: {
          StringEquals: { 'AWS:SourceAccount': args.accountId },
          ArnLike: { 'AWS:SourceArn': args.configurationSetArn },
        },
      },
    ],
  };
}

/** The DNS records SES needs (stack output mailDnsRecords): Easy DKIM, the MAIL FROM domain, SPF. */
export function mailDnsRecords(args: { domain: string; mailFromDomain: string; region: string; dkimTokens: string[] }) {
  return [
    ...args.dkimTokens.map((token) => ({
      type: 'CNAME',
      name: `${token}._domainkey.${args.domain}`,
      value: `${token}.dkim.amazonses.com`,
    })),
    { type: 'MX', name: args.mailFromDomain, value: `10 feedback-smtp.${args.region}.amazonses.com` },
    { type: 'TXT', name: args.mailFromDomain, value: '"v=spf1 include:amazonses.com ~all"' },
  ];
}
