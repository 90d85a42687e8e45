// Database: RDS PostgreSQL 17 in the isolated subnets. Not publicly accessible, storage encrypted,
// the master password generated and kept by RDS in Secrets Manager (manageMasterUserPassword:
// never in Pulumi state, rotated by RDS), TLS forced by its parameter group, backups, deletion
// protection and a final snapshot when the stack says so, Multi-AZ by config, and port 5432 open
// to the functions' security group only.
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';

export interface DatabaseArgs {
  /** RDS identifier, e.g. lanyard-prod. */
  identifier: string;
  vpcId: pulumi.Input<string>;
  subnetIds: pulumi.Input<string>[];
  /** The only security group allowed to connect. */
  clientSecurityGroupId: pulumi.Input<string>;
  instanceClass: string;
  allocatedStorageGb: number;
  maxAllocatedStorageGb: number;
  multiAz: boolean;
  backupRetentionDays: number;
  deletionProtection: boolean;
  logRetentionDays: number;
  tags: Record<string, string>;
}

export const DATABASE_NAME = 'lanyard';
export const MASTER_USERNAME = 'lanyard_admin';
export const ENGINE_MAJOR = '17';

export class Database extends pulumi.ComponentResource {
  readonly instanceIdentifier: pulumi.Output<string>;
  readonly endpoint: pulumi.Output<string>;
  readonly address: pulumi.Output<string>;
  readonly port: pulumi.Output<number>;
  readonly databaseName: string = DATABASE_NAME;
  /** The RDS-managed secret holding {"username","password"} of the master user. */
  readonly masterSecretArn: pulumi.Output<string>;
  readonly securityGroupId: pulumi.Output<string>;

  constructor(name: string, args: DatabaseArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Database', name, {}, opts);
    const parent = { parent: this };

    const sg = new aws.ec2.SecurityGroup(
      `${name}-db`,
      {
        vpcId: args.vpcId,
        description: 'PostgreSQL: from the Lanyard functions only',
        tags: { ...args.tags, Name: `${name}-db` },
      },
      parent,
    );
    // The one ingress rule; no egress rule (the database initiates nothing).
    new aws.vpc.SecurityGroupIngressRule(
      `${name}-db-postgres-from-functions`,
      {
        securityGroupId: sg.id,
        referencedSecurityGroupId: args.clientSecurityGroupId,
        ipProtocol: 'tcp',
        fromPort: 5432,
        toPort: 5432,
        description: 'PostgreSQL from the functions',
      },
      parent,
    );

    const subnetGroup = new aws.rds.SubnetGroup(
      `${name}-subnets`,
      {
        subnetIds: args.subnetIds,
        description: 'Lanyard database: isolated subnets',
        tags: args.tags,
      },
      parent,
    );

    const parameters = new aws.rds.ParameterGroup(
      `${name}-pg${ENGINE_MAJOR}`,
      {
        family: `postgres${ENGINE_MAJOR}`,
        description: 'Lanyard: TLS only, SCRAM passwords, slow statements logged without parameters',
        parameters: [
          { name: 'rds.force_ssl', value: '1' },
          { name: 'ssl_min_protocol_version', value: 'TLSv1.2' },
          { name: 'password_encryption', value: 'scram-sha-256' },
          { name: 'log_min_duration_statement', value: '500' },
          // A slow or failing statement is logged with its text only: bind parameters (password
          // hashes, token digests, e-mail addresses) never reach CloudWatch.
          { name: 'log_parameter_max_length', value: '0' },
          { name: 'log_parameter_max_length_on_error', value: '0' },
        ],
        tags: args.tags,
      },
      parent,
    );

    // RDS creates this group when log export is on; creating it first sets the retention.
    const logGroup = new aws.cloudwatch.LogGroup(
      `${name}-postgresql-log`,
      {
        name: `/aws/rds/instance/${args.identifier}/postgresql`,
        retentionInDays: args.logRetentionDays,
        tags: args.tags,
      },
      parent,
    );

    const instance = new aws.rds.Instance(
      `${name}-instance`,
      {
        identifier: args.identifier,
        engine: 'postgres',
        engineVersion: ENGINE_MAJOR,
        autoMinorVersionUpgrade: true,
        allowMajorVersionUpgrade: false,
        instanceClass: args.instanceClass,
        allocatedStorage: args.allocatedStorageGb,
        maxAllocatedStorage: args.maxAllocatedStorageGb,
        storageType: 'gp3',
        storageEncrypted: true,
        dbName: DATABASE_NAME,
        username: MASTER_USERNAME,
        manageMasterUserPassword: true,
        dbSubnetGroupName: subnetGroup.name,
        vpcSecurityGroupIds: [sg.id],
        parameterGroupName: parameters.name,
        publiclyAccessible: false,
        multiAz: args.multiAz,
        caCertIdentifier: 'rds-ca-rsa2048-g1',
        backupRetentionPeriod: args.backupRetentionDays,
        backupWindow: '03:00-03:30',
        maintenanceWindow: 'sun:04:00-sun:04:30',
        copyTagsToSnapshot: true,
        deletionProtection: args.deletionProtection,
        skipFinalSnapshot: !args.deletionProtection,
        finalSnapshotIdentifier: args.deletionProtection ? `${args.identifier}-final` : undefined,
        enabledCloudwatchLogsExports: ['postgresql'],
        performanceInsightsEnabled: false,
        applyImmediately: false,
        tags: args.tags,
      },
      { parent: this, protect: args.deletionProtection, dependsOn: [logGroup] },
    );

    this.instanceIdentifier = instance.identifier;
    this.endpoint = instance.endpoint;
    this.address = instance.address;
    this.port = instance.port;
    this.masterSecretArn = instance.masterUserSecrets.apply((s) => {
      const arn = s?.[0]?.secretArn;
      if (!arn && !pulumi.runtime.isDryRun()) throw new Error('RDS did not report the master user secret');
      return arn ?? '';
    });
    this.securityGroupId = sg.id;
    this.registerOutputs({
      endpoint: this.endpoint,
      masterSecretArn: this.masterSecretArn,
      securityGroupId: this.securityGroupId,
    });
  }
}
