// Audit: who invoked the admin function, as AWS itself verified it. A CloudTrail trail that records
// only the Lambda Invoke data events of the admin function (advanced event selectors on its ARN;
// no management events, so it does not double-bill the account's own trail), into a private S3
// bucket: public access blocked, ACLs disabled, encrypted, TLS only, writable by this trail only,
// log file validation on, objects expired after the retention. The function itself cannot see its
// IAM caller (the Invoke context carries no caller identity); each CloudTrail record's requestID
// is the invocation's request id, which the function writes into its audit row.
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import { auditBucketPolicy } from '../policies';

export interface AuditArgs {
  /** e.g. lanyard-prod: the trail is <prefix>-admin-audit. */
  namePrefix: string;
  adminFunctionArn: pulumi.Input<string>;
  retentionDays: number;
  /** Empty the bucket on `pulumi destroy` (throwaway stacks only). */
  forceDestroy: boolean;
  tags: Record<string, string>;
}

export class Audit extends pulumi.ComponentResource {
  readonly trailArn: pulumi.Output<string>;
  readonly bucketName: pulumi.Output<string>;

  constructor(name: string, args: AuditArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Audit', name, {}, opts);
    const parent = { parent: this };
    const account = aws.getCallerIdentityOutput({}, parent);
    const region = aws.getRegionOutput({}, parent);

    const bucket = new aws.s3.Bucket(
      `${name}-trail`,
      { bucketPrefix: `${args.namePrefix}-audit-`, forceDestroy: args.forceDestroy, tags: args.tags },
      parent,
    );
    const publicAccess = new aws.s3.BucketPublicAccessBlock(
      `${name}-trail-private`,
      {
        bucket: bucket.id,
        blockPublicAcls: true,
        blockPublicPolicy: true,
        ignorePublicAcls: true,
        restrictPublicBuckets: true,
      },
      parent,
    );
    new aws.s3.BucketOwnershipControls(
      `${name}-trail-owner`,
      { bucket: bucket.id, rule: { objectOwnership: 'BucketOwnerEnforced' } },
      parent,
    );
    new aws.s3.BucketServerSideEncryptionConfiguration(
      `${name}-trail-sse`,
      { bucket: bucket.id, rules: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: 'AES256' } }] },
      parent,
    );
    new aws.s3.BucketLifecycleConfiguration(
      `${name}-trail-expiry`,
      {
        bucket: bucket.id,
        rules: [{ id: 'expire', status: 'Enabled', filter: {}, expiration: { days: args.retentionDays } }],
      },
      parent,
    );

    // The trail's ARN is known before it exists, and the bucket policy must exist first.
    const trailName = `${args.namePrefix}-admin-audit`;
    const trailArn = pulumi.interpolate`arn:aws:cloudtrail:${region.region}:${account.accountId}:trail/${trailName}`;
    const policy = new aws.s3.BucketPolicy(
      `${name}-trail-policy`,
      {
        bucket: bucket.id,
        policy: pulumi
          .all([bucket.arn, trailArn, account.accountId])
          .apply(([bucketArn, arn, accountId]) =>
            JSON.stringify(auditBucketPolicy({ bucketArn, trailArn: arn, accountId })),
          ),
      },
      { parent: this, dependsOn: [publicAccess] },
    );

    const trail = new aws.cloudtrail.Trail(
      `${name}-trail`,
      {
        name: trailName,
        s3BucketName: bucket.id,
        enableLogging: true,
        enableLogFileValidation: true,
        isMultiRegionTrail: false,
        includeGlobalServiceEvents: false,
        advancedEventSelectors: [
          {
            name: 'Invocations of the Lanyard admin function',
            fieldSelectors: [
              { field: 'eventCategory', equals: ['Data'] },
              { field: 'resources.type', equals: ['AWS::Lambda::Function'] },
              { field: 'resources.ARN', equals: [args.adminFunctionArn] },
            ],
          },
        ],
        tags: args.tags,
      },
      { parent: this, dependsOn: [policy] },
    );

    this.trailArn = trail.arn;
    this.bucketName = bucket.id;
    this.registerOutputs({ trailArn: this.trailArn, bucketName: this.bucketName });
  }
}
