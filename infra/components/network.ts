// Network: a VPC over N (2) availability zones with isolated subnets only — no internet gateway,
// no NAT gateway (nothing here calls the internet) — the functions' and the endpoint's security
// groups, and an interface endpoint for Secrets Manager with private DNS, so the SDK's regional
// host name resolves inside the VPC. Plain aws.ec2 resources rather than awsx.ec2.Vpc: awsx's
// value is NAT and public subnets, which we do not want, and as a remote component it is opaque
// to offline tests (one resource, no children), while each of these can be asserted.
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import { secretsEndpointPolicy } from '../policies';

export interface NetworkArgs {
  cidrBlock: string;
  /** The zones to span (at least zoneCount of them). */
  availabilityZones: pulumi.Input<string[]>;
  /** How many zones (and isolated subnets): 2 by default. */
  zoneCount: number;
  tags: Record<string, string>;
}

/** The /20 subnets of a /16 (or smaller equivalent): index i → the i-th block of 16 /20s. */
export function subnetCidr(vpcCidr: string, index: number): string {
  const [ip, bitsText] = vpcCidr.split('/');
  const bits = Number(bitsText);
  const newBits = Math.min(bits + 4, 28);
  const base = ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const addr = base + index * 2 ** (32 - newBits);
  return `${[24, 16, 8, 0].map((s) => Math.floor(addr / 2 ** s) % 256).join('.')}/${newBits}`;
}

export class Network extends pulumi.ComponentResource {
  readonly vpcId: pulumi.Output<string>;
  readonly subnetIds: pulumi.Output<string>[];
  /** Attached to every function: egress only to the database and the endpoints. */
  readonly functionSecurityGroupId: pulumi.Output<string>;
  readonly endpointSecurityGroupId: pulumi.Output<string>;
  readonly secretsManagerEndpointId: pulumi.Output<string>;
  private readonly secretsManagerEndpoint: aws.ec2.VpcEndpoint;

  constructor(name: string, args: NetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Network', name, {}, opts);
    const parent = { parent: this };

    const vpc = new aws.ec2.Vpc(
      `${name}-vpc`,
      {
        cidrBlock: args.cidrBlock,
        enableDnsHostnames: true, // required for the endpoint's private DNS
        enableDnsSupport: true,
        tags: { ...args.tags, Name: `${name}-vpc` },
      },
      parent,
    );

    // Lock down the default security group: nothing may use it by accident.
    new aws.ec2.DefaultSecurityGroup(`${name}-default-sg`, { vpcId: vpc.id, tags: args.tags }, parent);

    const routeTable = new aws.ec2.RouteTable(
      `${name}-isolated`,
      { vpcId: vpc.id, tags: { ...args.tags, Name: `${name}-isolated` } },
      parent,
    );

    const zones = pulumi.output(args.availabilityZones);
    this.subnetIds = Array.from({ length: args.zoneCount }, (_, i) => {
      const subnet = new aws.ec2.Subnet(
        `${name}-isolated-${i}`,
        {
          vpcId: vpc.id,
          cidrBlock: subnetCidr(args.cidrBlock, i),
          availabilityZone: zones.apply((z) => z[i]),
          mapPublicIpOnLaunch: false,
          tags: { ...args.tags, Name: `${name}-isolated-${i}`, tier: 'isolated' },
        },
        parent,
      );
      new aws.ec2.RouteTableAssociation(
        `${name}-isolated-${i}`,
        { subnetId: subnet.id, routeTableId: routeTable.id },
        parent,
      );
      return subnet.id;
    });

    const functionSg = new aws.ec2.SecurityGroup(
      `${name}-functions`,
      {
        vpcId: vpc.id,
        description: 'Lanyard functions: egress to PostgreSQL and the VPC endpoints only',
        tags: { ...args.tags, Name: `${name}-functions` },
      },
      parent,
    );
    const endpointSg = new aws.ec2.SecurityGroup(
      `${name}-endpoints`,
      {
        vpcId: vpc.id,
        description: 'Interface endpoints: HTTPS from the functions only',
        tags: { ...args.tags, Name: `${name}-endpoints` },
      },
      parent,
    );

    new aws.vpc.SecurityGroupIngressRule(
      `${name}-endpoints-https-from-functions`,
      {
        securityGroupId: endpointSg.id,
        referencedSecurityGroupId: functionSg.id,
        ipProtocol: 'tcp',
        fromPort: 443,
        toPort: 443,
        description: 'HTTPS from the functions',
      },
      parent,
    );
    new aws.vpc.SecurityGroupEgressRule(
      `${name}-functions-https-to-endpoints`,
      {
        securityGroupId: functionSg.id,
        referencedSecurityGroupId: endpointSg.id,
        ipProtocol: 'tcp',
        fromPort: 443,
        toPort: 443,
        description: 'HTTPS to the VPC endpoints',
      },
      parent,
    );
    new aws.vpc.SecurityGroupEgressRule(
      `${name}-functions-postgres-in-vpc`,
      {
        securityGroupId: functionSg.id,
        cidrIpv4: args.cidrBlock,
        ipProtocol: 'tcp',
        fromPort: 5432,
        toPort: 5432,
        description: 'PostgreSQL inside the VPC (the database group admits only this group)',
      },
      parent,
    );

    const region = aws.getRegionOutput({}, parent);
    const endpoint = new aws.ec2.VpcEndpoint(
      `${name}-secretsmanager`,
      {
        vpcId: vpc.id,
        serviceName: pulumi.interpolate`com.amazonaws.${region.region}.secretsmanager`,
        vpcEndpointType: 'Interface',
        privateDnsEnabled: true,
        subnetIds: this.subnetIds,
        securityGroupIds: [endpointSg.id],
        tags: { ...args.tags, Name: `${name}-secretsmanager` },
      },
      parent,
    );

    this.secretsManagerEndpoint = endpoint;
    this.vpcId = vpc.id;
    this.functionSecurityGroupId = functionSg.id;
    this.endpointSecurityGroupId = endpointSg.id;
    this.secretsManagerEndpointId = endpoint.id;
    this.registerOutputs({
      vpcId: this.vpcId,
      subnetIds: this.subnetIds,
      functionSecurityGroupId: this.functionSecurityGroupId,
      secretsManagerEndpointId: this.secretsManagerEndpointId,
    });
  }

  /**
   * Restrict the Secrets Manager endpoint to these secrets (policies.ts). Separate from the
   * endpoint because the RDS master secret exists only once the database (inside this VPC) does.
   */
  restrictSecretsEndpoint(name: string, secretArns: pulumi.Input<string>[]): aws.ec2.VpcEndpointPolicy {
    const account = aws.getCallerIdentityOutput({}, { parent: this });
    return new aws.ec2.VpcEndpointPolicy(
      name,
      {
        vpcEndpointId: this.secretsManagerEndpoint.id,
        policy: pulumi
          .all([account.accountId, pulumi.all(secretArns)])
          .apply(([accountId, arns]) => JSON.stringify(secretsEndpointPolicy({ accountId, secretArns: arns }))),
      },
      { parent: this },
    );
  }
}
