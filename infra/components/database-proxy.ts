// RDS Proxy between the functions and the database (stack option lanyard:rdsProxy): its own
// security group (PostgreSQL from the functions in, to the database out), an IAM role that may
// read exactly the database users' credentials secrets, the proxy (TLS required, credentials from
// Secrets Manager), its default target group's pool limits and the database as its target.
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';

export interface DatabaseProxyArgs {
  /** The proxy's name (lower case, hyphens). */
  proxyName: string;
  vpcId: pulumi.Input<string>;
  subnetIds: pulumi.Input<pulumi.Input<string>[]>;
  /** The functions' security group: the only clients. */
  clientSecurityGroupId: pulumi.Input<string>;
  /** The database's security group, opened to the proxy. */
  databaseSecurityGroupId: pulumi.Input<string>;
  dbInstanceIdentifier: pulumi.Input<string>;
  /** The credentials secrets of the database users that connect through the proxy. */
  secretArns: pulumi.Input<string>[];
  /** Share of the database's max_connections the proxy may open. */
  maxConnectionsPercent: number;
  tags: Record<string, string>;
}

export class DatabaseProxy extends pulumi.ComponentResource {
  /** Where the functions connect instead of the database. */
  readonly endpoint: pulumi.Output<string>;
  readonly securityGroupId: pulumi.Output<string>;

  constructor(name: string, args: DatabaseProxyArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:DatabaseProxy', name, {}, opts);
    const parent = { parent: this };

    const sg = new aws.ec2.SecurityGroup(
      `${name}-sg`,
      { vpcId: args.vpcId, description: 'RDS Proxy: from the Lanyard functions to the database', tags: args.tags },
      parent,
    );
    new aws.vpc.SecurityGroupIngressRule(
      `${name}-from-functions`,
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
    new aws.vpc.SecurityGroupEgressRule(
      `${name}-to-database`,
      {
        securityGroupId: sg.id,
        referencedSecurityGroupId: args.databaseSecurityGroupId,
        ipProtocol: 'tcp',
        fromPort: 5432,
        toPort: 5432,
        description: 'PostgreSQL to the database',
      },
      parent,
    );
    new aws.vpc.SecurityGroupIngressRule(
      `${name}-database-from-proxy`,
      {
        securityGroupId: args.databaseSecurityGroupId,
        referencedSecurityGroupId: sg.id,
        ipProtocol: 'tcp',
        fromPort: 5432,
        toPort: 5432,
        description: 'PostgreSQL from the RDS Proxy',
      },
      parent,
    );

    const role = new aws.iam.Role(
      `${name}-role`,
      {
        assumeRolePolicy: JSON.stringify({
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Principal: { Service: 'rds.amazonaws.com' }, Action: 'sts:AssumeRole' }],
        }),
        tags: args.tags,
      },
      parent,
    );
    new aws.iam.RolePolicy(
      `${name}-secret`,
      {
        role: role.id,
        policy: pulumi.all(args.secretArns).apply((arns) =>
          JSON.stringify({
            Version: '2012-10-17',
            Statement: [{ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: arns }],
          }),
        ),
      },
      parent,
    );

    const proxy = new aws.rds.Proxy(
      `${name}`,
      {
        name: args.proxyName,
        engineFamily: 'POSTGRESQL',
        requireTls: true,
        roleArn: role.arn,
        vpcSubnetIds: args.subnetIds,
        vpcSecurityGroupIds: [sg.id],
        auths: args.secretArns.map((secretArn) => ({ authScheme: 'SECRETS', secretArn, iamAuth: 'DISABLED' })),
        idleClientTimeout: 1800,
        debugLogging: false, // would log statements, parameters included
        tags: args.tags,
      },
      parent,
    );
    const targetGroup = new aws.rds.ProxyDefaultTargetGroup(
      `${name}-pool`,
      {
        dbProxyName: proxy.name,
        connectionPoolConfig: {
          maxConnectionsPercent: args.maxConnectionsPercent,
          maxIdleConnectionsPercent: Math.floor(args.maxConnectionsPercent / 2),
          connectionBorrowTimeout: 30,
        },
      },
      parent,
    );
    new aws.rds.ProxyTarget(
      `${name}-target`,
      { dbProxyName: proxy.name, targetGroupName: targetGroup.name, dbInstanceIdentifier: args.dbInstanceIdentifier },
      parent,
    );

    this.endpoint = proxy.endpoint;
    this.securityGroupId = sg.id;
    this.registerOutputs({ endpoint: this.endpoint, securityGroupId: this.securityGroupId });
  }
}
