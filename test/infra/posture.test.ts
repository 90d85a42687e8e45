// The production stack's security and reliability posture, resource by resource, under mocks
// (default configuration). Each assertion is a property a regression would silently lose.
import { beforeAll, describe, expect, it } from 'vitest';
import { VPC_ENI_ACTIONS, type PolicyDocument } from '../../infra/policies';
import { findPolicyProblems } from './policy-problems';
import { loadStack, type LoadedStack } from './stack-under-mocks';

let stack: LoadedStack;
beforeAll(async () => {
  stack = await loadStack();
});

const FUNCTIONS = ['api-fn', 'migrations-fn', 'admin-fn'];
const MASTER_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-0123-4567-AbCdEf';
const APP_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/app-db-AbCdEf';
const KEY_RING = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/session-keys-AbCdEf';
const SIGNING_KEYS = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/signing-keys-AbCdEf';
const fn = (name: string) => stack.one('aws:lambda/function:Function', name);

describe('network', () => {
  it('spans two zones with isolated subnets only: no internet or NAT gateway, no public IPs, no routes out', () => {
    const subnets = stack.byType('aws:ec2/subnet:Subnet');
    expect(subnets).toHaveLength(2);
    expect(new Set(subnets.map((s) => s.inputs.availabilityZone))).toEqual(new Set(['eu-west-1a', 'eu-west-1b']));
    for (const s of subnets) expect(s.inputs.mapPublicIpOnLaunch).toBe(false);
    expect(stack.byType('aws:ec2/internetGateway:InternetGateway')).toHaveLength(0);
    expect(stack.byType('aws:ec2/natGateway:NatGateway')).toHaveLength(0);
    expect(stack.byType('aws:ec2/eip:Eip')).toHaveLength(0);
    expect(stack.byType('aws:ec2/route:Route')).toHaveLength(0);
    expect(stack.one('aws:ec2/routeTable:RouteTable').inputs.routes ?? []).toEqual([]);
    expect(stack.byType('aws:ec2/routeTableAssociation:RouteTableAssociation')).toHaveLength(2);
  });

  it('reaches Secrets Manager through an interface endpoint with private DNS, HTTPS from the functions only', () => {
    const endpoint = stack.one('aws:ec2/vpcEndpoint:VpcEndpoint');
    expect(endpoint.inputs).toMatchObject({
      serviceName: 'com.amazonaws.eu-west-1.secretsmanager',
      vpcEndpointType: 'Interface',
      privateDnsEnabled: true,
      subnetIds: ['network-isolated-0-id', 'network-isolated-1-id'],
      securityGroupIds: ['network-endpoints-id'],
    });
    expect(stack.one('aws:ec2/vpc:Vpc').inputs).toMatchObject({ enableDnsHostnames: true, enableDnsSupport: true });
    const ingress = stack
      .byType('aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule')
      .filter((r) => r.inputs.securityGroupId === 'network-endpoints-id');
    expect(ingress.map((r) => r.inputs)).toEqual([
      expect.objectContaining({
        referencedSecurityGroupId: 'network-functions-id',
        ipProtocol: 'tcp',
        fromPort: 443,
        toPort: 443,
      }),
    ]);
  });

  it("limits the functions' egress to HTTPS to the endpoints and PostgreSQL inside the VPC", () => {
    const egress = stack.byType('aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule').map((r) => r.inputs);
    expect(egress).toHaveLength(2);
    for (const rule of egress) expect(rule.securityGroupId).toBe('network-functions-id');
    expect(egress).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ referencedSecurityGroupId: 'network-endpoints-id', fromPort: 443, toPort: 443 }),
        expect.objectContaining({ cidrIpv4: '10.40.0.0/16', fromPort: 5432, toPort: 5432 }),
      ]),
    );
    // No inline rules anywhere (they would fight the rule resources and hide a 0.0.0.0/0).
    for (const sg of stack.byType('aws:ec2/securityGroup:SecurityGroup')) {
      expect(sg.inputs.ingress ?? []).toEqual([]);
      expect(sg.inputs.egress ?? []).toEqual([]);
    }
    expect(JSON.stringify(stack.resources.map((r) => r.inputs))).not.toContain('0.0.0.0/0');
  });
});

describe('database', () => {
  it('is RDS PostgreSQL 17: private, encrypted, TLS-only, its password only in Secrets Manager', () => {
    const db = stack.one('aws:rds/instance:Instance');
    expect(db.inputs).toMatchObject({
      engine: 'postgres',
      engineVersion: '17',
      publiclyAccessible: false,
      storageEncrypted: true,
      manageMasterUserPassword: true,
      parameterGroupName: 'database-pg17',
      dbSubnetGroupName: 'database-subnets',
      vpcSecurityGroupIds: ['database-db-id'],
      caCertIdentifier: 'rds-ca-rsa2048-g1',
    });
    expect(db.inputs.password).toBeUndefined();
    expect(JSON.stringify(stack.resources.map((r) => r.inputs))).not.toMatch(/"password"\s*:/i);
    const params = stack.one('aws:rds/parameterGroup:ParameterGroup').inputs;
    expect(params.family).toBe('postgres17');
    expect(params.parameters).toEqual(expect.arrayContaining([{ name: 'rds.force_ssl', value: '1' }]));
    expect(stack.one('aws:rds/subnetGroup:SubnetGroup').inputs.subnetIds).toEqual([
      'network-isolated-0-id',
      'network-isolated-1-id',
    ]);
  });

  it('keeps backups, deletion protection, a final snapshot and Pulumi protect by default', () => {
    const db = stack.one('aws:rds/instance:Instance');
    expect(db.inputs).toMatchObject({
      backupRetentionPeriod: 7,
      deletionProtection: true,
      skipFinalSnapshot: false,
      finalSnapshotIdentifier: 'lanyard-prod-final',
      multiAz: false,
    });
    expect(db.protect).toBe(true);
  });

  it("admits port 5432 from the functions' security group only", () => {
    const rules = stack
      .byType('aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule')
      .filter((r) => r.inputs.securityGroupId === 'database-db-id');
    expect(rules.map((r) => r.inputs)).toEqual([
      expect.objectContaining({
        referencedSecurityGroupId: 'network-functions-id',
        ipProtocol: 'tcp',
        fromPort: 5432,
        toPort: 5432,
      }),
    ]);
    expect(rules[0].inputs.cidrIpv4).toBeUndefined();
    expect(rules[0].inputs.cidrIpv6).toBeUndefined();
  });
});

describe('functions', () => {
  it("run the bundles on nodejs22.x, arm64, inside the isolated subnets with the functions' group", async () => {
    for (const name of FUNCTIONS) {
      const f = fn(name);
      expect(f.inputs).toMatchObject({
        runtime: 'nodejs22.x',
        architectures: ['arm64'],
        handler: 'index.handler',
        vpcConfig: {
          subnetIds: ['network-isolated-0-id', 'network-isolated-1-id'],
          securityGroupIds: ['network-functions-id'],
        },
        loggingConfig: { logFormat: 'JSON', logGroup: `/aws/lambda/${f.inputs.name}` },
      });
      expect(await f.inputs.code.path).toMatch(
        new RegExp(`/dist/lambda/${name.replace('-fn', '').replace('migrations', 'migrate')}$`),
      );
    }
    expect(fn('api-fn').inputs.name).toBe('lanyard-prod-api');
    expect(fn('admin-fn').inputs.name).toBe('lanyard-prod-admin');
  });

  it('get secret ARNs and the database location in their environment, never a secret value', () => {
    // The master user's secret reaches the migration function only; the others connect as lanyard_app.
    expect(fn('migrations-fn').inputs.environment.variables).toMatchObject({
      DB_SECRET_ARN: MASTER_SECRET,
      APP_DB_SECRET_ARN: APP_SECRET,
    });
    for (const name of ['api-fn', 'admin-fn']) {
      expect(fn(name).inputs.environment.variables.DB_SECRET_ARN).toBe(APP_SECRET);
      expect(fn(name).inputs.environment.variables.APP_DB_SECRET_ARN).toBeUndefined();
      expect(JSON.stringify(fn(name).inputs.environment.variables)).not.toContain('rds!db');
    }
    for (const name of FUNCTIONS) {
      const env = fn(name).inputs.environment.variables;
      expect(env).toMatchObject({
        SESSION_KEYS_SECRET_ARN:
          'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/session-keys-AbCdEf',
        SIGNING_KEYS_SECRET_ARN:
          'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/signing-keys-AbCdEf',
        DB_HOST: 'lanyard-prod.abcdefghijkl.eu-west-1.rds.amazonaws.com',
        DB_PORT: '5432',
        DB_NAME: 'lanyard',
        // Connected directly (no RDS Proxy): named prepared statements.
        DB_PREPARED_STATEMENTS: 'true',
      });
      const suspicious = Object.keys(env).filter(
        (k) => !k.endsWith('_ARN') && /PASSWORD|SECRET|KEY|TOKEN|DATABASE_URL/.test(k),
      );
      expect(suspicious).toEqual([]);
      for (const value of Object.values(env)) expect(String(value)).not.toMatch(/^postgres(ql)?:\/\//);
    }
    expect(fn('api-fn').inputs.environment.variables.PUBLIC_URL).toBe(
      'https://abc123.execute-api.eu-west-1.amazonaws.com',
    );
    expect(fn('api-fn').inputs.environment.variables.REFRESH_REUSE_LEEWAY).toBe('30');
  });

  it('hold the API within the database connection budget, and migrations to one at a time', () => {
    expect(fn('api-fn').inputs.reservedConcurrentExecutions).toBe(20);
    expect(fn('migrations-fn').inputs.reservedConcurrentExecutions).toBe(1);
    expect(fn('admin-fn').inputs.reservedConcurrentExecutions).toBe(2);
  });

  it('each have their own role whose policy has no wildcard action and names the exact secret ARNs', () => {
    const roles = stack.byType('aws:iam/role:Role');
    expect(roles.map((r) => r.name).sort()).toEqual(['admin-role', 'api-role', 'migrations-role', 'retention-role']);
    expect(new Set([...FUNCTIONS, 'retention-fn'].map((n) => fn(n).inputs.role)).size).toBe(4);
    for (const role of roles) {
      expect(JSON.parse(role.inputs.assumeRolePolicy).Statement).toEqual([
        { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
      ]);
    }
    expect(stack.byType('aws:iam/rolePolicyAttachment:RolePolicyAttachment')).toHaveLength(0); // no managed policies
    const dbSecret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-0123-4567-AbCdEf';
    const keyRing = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/session-keys-AbCdEf';
    const signingKeys = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/signing-keys-AbCdEf';
    const policies = Object.fromEntries(
      stack.byType('aws:iam/rolePolicy:RolePolicy').map((p) => [p.name, JSON.parse(p.inputs.policy) as PolicyDocument]),
    );
    expect(Object.keys(policies).sort()).toEqual([
      'admin-policy',
      'api-policy',
      'migrations-policy',
      'retention-policy',
    ]);
    for (const [name, doc] of Object.entries(policies)) {
      expect(findPolicyProblems(doc), name).toEqual([]);
      const actions = doc.Statement.flatMap((s) => s.Action);
      for (const a of actions) expect(a).not.toContain('*');
      const read = doc.Statement.find((s) => s.Sid === 'ReadSecrets')!;
      // Only the migration function may read the master user's secret; the retention function
      // reads the app role's secret only.
      expect(read.Resource).toEqual(
        name === 'migrations-policy'
          ? [dbSecret, APP_SECRET, keyRing, signingKeys]
          : name === 'retention-policy'
            ? [APP_SECRET]
            : [APP_SECRET, keyRing, signingKeys],
      );
      const star = doc.Statement.filter(
        (s) => s.Resource === '*' || (Array.isArray(s.Resource) && s.Resource.includes('*')),
      );
      expect(star.map((s) => s.Action)).toEqual([VPC_ENI_ACTIONS]);
    }
    const writes = (n: string) =>
      policies[n].Statement.filter((s) => [s.Action].flat().includes('secretsmanager:PutSecretValue'));
    expect(writes('api-policy')).toEqual([]); // the API cannot change the key ring nor the signing keys
    // The migration function generates and rotates the app role's password; nobody else writes it.
    expect(writes('migrations-policy').map((s) => s.Resource)).toEqual([[APP_SECRET, keyRing, signingKeys]]);
    expect(writes('admin-policy').map((s) => s.Resource)).toEqual([[keyRing, signingKeys]]);
    expect(writes('retention-policy')).toEqual([]);
    expect(policies['api-policy'].Statement.find((s) => s.Sid === 'OwnLogs')!.Resource).toEqual([
      'arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/lanyard-prod-api:*',
    ]);
  });
});

describe('secrets', () => {
  it('the session key ring, the OpenID Connect signing keys and the app role credentials are secrets created empty: no value in Pulumi state', () => {
    const secrets = stack.byType('aws:secretsmanager/secret:Secret');
    const prefixes = secrets.map((s) => s.inputs.namePrefix).filter((p) => p?.startsWith('lanyard-prod/'));
    expect(prefixes.sort()).toEqual([
      'lanyard-prod/app-db-',
      'lanyard-prod/session-keys-',
      'lanyard-prod/signing-keys-',
    ]);
    // The values are written by the migration function, never by the Pulumi program.
    expect(stack.byType('aws:secretsmanager/secretVersion:SecretVersion')).toEqual([]);
  });
});

describe('API', () => {
  it('is an HTTP API with a $default route and stage, route throttling and JSON access logs', () => {
    expect(stack.one('aws:apigatewayv2/api:Api').inputs).toMatchObject({
      protocolType: 'HTTP',
      disableExecuteApiEndpoint: false,
    });
    expect(stack.one('aws:apigatewayv2/integration:Integration').inputs).toMatchObject({
      integrationType: 'AWS_PROXY',
      payloadFormatVersion: '2.0',
    });
    expect(stack.one('aws:apigatewayv2/route:Route').inputs).toMatchObject({
      routeKey: '$default',
      target: 'integrations/api-lambda-id',
    });
    const stage = stack.one('aws:apigatewayv2/stage:Stage').inputs;
    expect(stage).toMatchObject({
      name: '$default',
      autoDeploy: true,
      defaultRouteSettings: { throttlingRateLimit: 100, throttlingBurstLimit: 200 },
    });
    expect(stage.accessLogSettings.destinationArn).toBe(
      'arn:aws:logs:eu-west-1:123456789012:log-group:/aws/apigateway/lanyard-prod-api/access',
    );
    expect(JSON.parse(stage.accessLogSettings.format)).toMatchObject({
      requestId: '$context.requestId',
      status: '$context.status',
    });
  });

  it('lets only this API invoke the function', () => {
    const permission = stack
      .byType('aws:lambda/permission:Permission')
      .filter((p) => p.inputs.function === 'lanyard-prod-api')
      .map((p) => p.inputs);
    expect(permission).toHaveLength(1);
    expect(permission[0]).toEqual(
      expect.objectContaining({
        action: 'lambda:InvokeFunction',
        function: 'lanyard-prod-api',
        principal: 'apigateway.amazonaws.com',
        sourceArn: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/*',
      }),
    );
    // The admin and migration functions have no resource policy at all: IAM callers only (the
    // other permission is the retention schedule's, below).
    expect(
      stack
        .byType('aws:lambda/permission:Permission')
        .map((p) => p.inputs.function)
        .sort(),
    ).toEqual(['lanyard-prod-api', 'lanyard-prod-prune']);
    expect(stack.byType('aws:lambda/functionUrl:FunctionUrl')).toHaveLength(0);
  });
});

describe('migrations', () => {
  it('are invoked during the deploy, keyed on the migration files, before the API and admin functions change', () => {
    const invocation = stack.one('aws:lambda/invocation:Invocation');
    expect(invocation.inputs.functionName).toBe('lanyard-prod-migrate');
    expect(JSON.parse(invocation.inputs.input)).toEqual({ action: 'migrate' });
    expect(invocation.inputs.triggers.migrations).toMatch(/^[0-9a-f]{64}$/);
    expect(invocation.dependsOn).toEqual(
      expect.arrayContaining(['migrations-fn', 'database-instance', 'network-secretsmanager']),
    );
    expect(fn('api-fn').dependsOn).toContain('migrations-run');
    expect(fn('admin-fn').dependsOn).toContain('migrations-run');
  });
});

describe('retention', () => {
  it("runs the maintenance bundle's prune handler, one at a time, as the app role (its secret only)", async () => {
    const f = fn('retention-fn');
    expect(f.inputs).toMatchObject({
      name: 'lanyard-prod-prune',
      runtime: 'nodejs22.x',
      architectures: ['arm64'],
      handler: 'index.prune',
      reservedConcurrentExecutions: 1,
      timeout: 300,
      vpcConfig: {
        subnetIds: ['network-isolated-0-id', 'network-isolated-1-id'],
        securityGroupIds: ['network-functions-id'],
      },
      loggingConfig: { logFormat: 'JSON', logGroup: '/aws/lambda/lanyard-prod-prune' },
    });
    expect(await f.inputs.code.path).toMatch(/\/dist\/lambda\/migrate$/);
    expect(f.inputs.environment.variables).toEqual({
      NODE_ENV: 'production',
      DB_SECRET_ARN: APP_SECRET,
      DB_HOST: 'lanyard-prod.abcdefghijkl.eu-west-1.rds.amazonaws.com',
      DB_PORT: '5432',
      DB_NAME: 'lanyard',
      LOG_LEVEL: 'info',
    });
    expect(f.dependsOn).toEqual(expect.arrayContaining(['retention-log', 'retention-policy', 'migrations-run']));
    const policy = JSON.parse(stack.one('aws:iam/rolePolicy:RolePolicy', 'retention-policy').inputs.policy);
    expect(policy).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Sid: 'OwnLogs',
          Effect: 'Allow',
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: ['arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/lanyard-prod-prune:*'],
        },
        { Sid: 'VpcNetworkInterfaces', Effect: 'Allow', Action: VPC_ENI_ACTIONS, Resource: '*' },
        {
          Sid: 'ReadSecrets',
          Effect: 'Allow',
          Action: ['secretsmanager:GetSecretValue'],
          Resource: [APP_SECRET],
        },
      ],
    });
  });

  it('is invoked hourly by an EventBridge rule, and only by that rule', () => {
    const rule = stack.one('aws:cloudwatch/eventRule:EventRule');
    expect(rule.inputs).toMatchObject({ name: 'lanyard-prod-prune', scheduleExpression: 'rate(1 hour)' });
    expect(rule.inputs.eventPattern).toBeUndefined();
    const target = stack.one('aws:cloudwatch/eventTarget:EventTarget');
    expect(target.inputs).toMatchObject({
      rule: 'lanyard-prod-prune',
      targetId: 'prune',
      arn: 'arn:aws:lambda:eu-west-1:123456789012:function:lanyard-prod-prune',
    });
    expect(target.inputs.input).toBeUndefined();
    expect(target.dependsOn).toContain('retention-invoke');
    const permission = stack
      .byType('aws:lambda/permission:Permission')
      .filter((p) => p.inputs.function === 'lanyard-prod-prune');
    expect(permission.map((p) => p.inputs)).toEqual([
      expect.objectContaining({
        action: 'lambda:InvokeFunction',
        function: 'lanyard-prod-prune',
        principal: 'events.amazonaws.com',
        sourceArn: 'arn:aws:events:eu-west-1:123456789012:rule/lanyard-prod-prune',
      }),
    ]);
    expect(stack.outputs.pruneFunctionName).toBe('lanyard-prod-prune');
  });
});

describe('observability', () => {
  it('gives every log group a retention', () => {
    const groups = stack.byType('aws:cloudwatch/logGroup:LogGroup');
    expect(groups.map((g) => g.inputs.name).sort()).toEqual([
      '/aws/apigateway/lanyard-prod-api/access',
      '/aws/lambda/lanyard-prod-admin',
      '/aws/lambda/lanyard-prod-api',
      '/aws/lambda/lanyard-prod-migrate',
      '/aws/lambda/lanyard-prod-prune',
      '/aws/rds/instance/lanyard-prod/postgresql',
    ]);
    for (const g of groups) expect(g.inputs.retentionInDays).toBe(30);
    for (const name of FUNCTIONS) expect(fn(name).dependsOn).toContain(name.replace('-fn', '-log'));
  });

  it('alarms on Lambda errors, throttles and duration, API 4xx and 5xx, app 429s, and RDS CPU, storage and connections', () => {
    const alarms = stack.byType('aws:cloudwatch/metricAlarm:MetricAlarm').map((a) => a.inputs);
    const key = (a: any) => `${a.namespace}/${a.metricName}/${Object.values(a.dimensions ?? {}).join(',')}`;
    expect(alarms.map(key).sort()).toEqual(
      [
        ...['lanyard-prod-api', 'lanyard-prod-migrate', 'lanyard-prod-admin', 'lanyard-prod-prune'].flatMap((f) =>
          ['Errors', 'Throttles', 'Duration'].map((m) => `AWS/Lambda/${m}/${f}`),
        ),
        'AWS/ApiGateway/5xx/api-http-id,$default',
        'AWS/ApiGateway/4xx/api-http-id,$default',
        'Lanyard/lanyard-prod/RateLimited/',
        'AWS/RDS/CPUUtilization/lanyard-prod',
        'AWS/RDS/FreeStorageSpace/lanyard-prod',
        'AWS/RDS/DatabaseConnections/lanyard-prod',
      ].sort(),
    );
    for (const a of alarms)
      expect(a.alarmActions).toEqual(['arn:aws:sns:eu-west-1:123456789012:lanyard-prod-alarms-topic']);
    expect(
      alarms.find((a) => a.metricName === 'Duration' && a.dimensions.FunctionName === 'lanyard-prod-api')!.threshold,
    ).toBe(29 * 1000 * 0.8);
    expect(alarms.find((a) => a.metricName === '4xx')).toMatchObject({
      statistic: 'Sum',
      period: 300,
      threshold: 500,
      comparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(alarms.find((a) => a.metricName === 'RateLimited')).toMatchObject({ statistic: 'Sum', threshold: 20 });
  });

  it("counts the app's 429 answers from its JSON request lines with a log metric filter", () => {
    expect(stack.one('aws:cloudwatch/logMetricFilter:LogMetricFilter').inputs).toEqual(
      expect.objectContaining({
        logGroupName: '/aws/lambda/lanyard-prod-api',
        pattern: '{ $.res.statusCode = 429 }',
        metricTransformation: { name: 'RateLimited', namespace: 'Lanyard/lanyard-prod', value: '1', unit: 'Count' },
      }),
    );
  });
});

describe('hardening', () => {
  it('never logs bind parameters (password hashes, token digests) of slow or failed statements', () => {
    const params = stack.one('aws:rds/parameterGroup:ParameterGroup').inputs.parameters;
    expect(params).toEqual(
      expect.arrayContaining([
        { name: 'log_parameter_max_length', value: '0' },
        { name: 'log_parameter_max_length_on_error', value: '0' },
        { name: 'log_min_duration_statement', value: '500' },
      ]),
    );
  });

  it("limits the Secrets Manager endpoint to this account's principals and Lanyard's four secrets", () => {
    const policy = stack.one('aws:ec2/vpcEndpointPolicy:VpcEndpointPolicy');
    expect(policy.inputs.vpcEndpointId).toBe('network-secretsmanager-id');
    expect(JSON.parse(policy.inputs.policy)).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Sid: 'LanyardSecretsOnly',
          Effect: 'Allow',
          Principal: { AWS: '*' },
          Action: ['secretsmanager:GetSecretValue', 'secretsmanager:PutSecretValue'],
          Resource: [MASTER_SECRET, APP_SECRET, KEY_RING, SIGNING_KEYS],
          Condition: { StringEquals: { 'aws:PrincipalAccount': '123456789012' } },
        },
      ],
    });
  });

  it("keeps the app role's secret apart, created empty (its value comes from the migration function)", () => {
    const secret = stack.one('aws:secretsmanager/secret:Secret', 'secrets-app-db');
    expect(secret.inputs).toMatchObject({ namePrefix: 'lanyard-prod/app-db-', recoveryWindowInDays: 7 });
    expect(stack.byType('aws:secretsmanager/secretVersion:SecretVersion')).toHaveLength(0);
  });
});

describe('audit', () => {
  it('records the admin function invocations only, as CloudTrail data events', () => {
    const trail = stack.one('aws:cloudtrail/trail:Trail').inputs;
    expect(trail).toMatchObject({
      name: 'lanyard-prod-admin-audit',
      s3BucketName: 'lanyard-prod-audit-0123',
      enableLogging: true,
      enableLogFileValidation: true,
      isMultiRegionTrail: false,
      includeGlobalServiceEvents: false,
    });
    expect(trail.advancedEventSelectors).toEqual([
      {
        name: 'Invocations of the Lanyard admin function',
        fieldSelectors: [
          { field: 'eventCategory', equals: ['Data'] },
          { field: 'resources.type', equals: ['AWS::Lambda::Function'] },
          { field: 'resources.ARN', equals: ['arn:aws:lambda:eu-west-1:123456789012:function:lanyard-prod-admin'] },
        ],
      },
    ]);
    expect(trail.eventSelectors ?? []).toEqual([]);
    expect(stack.one('aws:cloudtrail/trail:Trail').dependsOn).toContain('audit-trail-policy');
  });

  it('keeps the records in a private, encrypted, TLS-only bucket only this trail writes, for the retention', () => {
    expect(stack.one('aws:s3/bucket:Bucket').inputs).toMatchObject({
      bucketPrefix: 'lanyard-prod-audit-',
      forceDestroy: false,
    });
    expect(stack.one('aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock').inputs).toMatchObject({
      bucket: 'lanyard-prod-audit-0123',
      blockPublicAcls: true,
      blockPublicPolicy: true,
      ignorePublicAcls: true,
      restrictPublicBuckets: true,
    });
    expect(stack.one('aws:s3/bucketOwnershipControls:BucketOwnershipControls').inputs.rule).toEqual({
      objectOwnership: 'BucketOwnerEnforced',
    });
    expect(
      stack.one('aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration').inputs.rules,
    ).toEqual([{ applyServerSideEncryptionByDefault: { sseAlgorithm: 'AES256' } }]);
    expect(stack.one('aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration').inputs.rules[0]).toMatchObject(
      { status: 'Enabled', expiration: { days: 365 } },
    );
    const trailArn = 'arn:aws:cloudtrail:eu-west-1:123456789012:trail/lanyard-prod-admin-audit';
    const bucketArn = 'arn:aws:s3:::lanyard-prod-audit-0123';
    expect(JSON.parse(stack.one('aws:s3/bucketPolicy:BucketPolicy').inputs.policy)).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Sid: 'CloudTrailAclCheck',
          Effect: 'Allow',
          Principal: { Service: 'cloudtrail.amazonaws.com' },
          Action: 's3:GetBucketAcl',
          Resource: bucketArn,
          Condition: { StringEquals: { 'aws:SourceArn': trailArn } },
        },
        {
          Sid: 'CloudTrailWrite',
          Effect: 'Allow',
          Principal: { Service: 'cloudtrail.amazonaws.com' },
          Action: 's3:PutObject',
          Resource: `${bucketArn}/AWSLogs/123456789012/*`,
          Condition: {
            StringEquals: { 'aws:SourceArn': trailArn, 's3:x-amz-acl': 'bucket-owner-full-control' },
          },
        },
        {
          Sid: 'TlsOnly',
          Effect: 'Deny',
          Principal: { AWS: '*' },
          Action: 's3:*',
          Resource: [bucketArn, `${bucketArn}/*`],
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        },
      ],
    });
  });
});

describe('edge (default httpApi)', () => {
  it('has no WAF and no REST API: the HTTP API is the front', () => {
    expect(stack.byType('aws:wafv2/webAcl:WebAcl')).toHaveLength(0);
    expect(stack.byType('aws:apigateway/restApi:RestApi')).toHaveLength(0);
    expect(stack.outputs.edge).toBe('httpApi');
  });
});

describe('stack outputs', () => {
  it('export what operators and `lanyard-admin --stack` read', () => {
    expect(stack.outputs).toMatchObject({
      apiUrl: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
      adminFunctionName: 'lanyard-prod-admin',
      databaseEndpoint: 'lanyard-prod.abcdefghijkl.eu-west-1.rds.amazonaws.com:5432',
      databaseSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-0123-4567-AbCdEf',
      sessionKeysSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/session-keys-AbCdEf',
      signingKeysSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/signing-keys-AbCdEf',
      appDatabaseSecretArn: APP_SECRET,
      auditTrailArn: 'arn:aws:cloudtrail:eu-west-1:123456789012:trail/lanyard-prod-admin-audit',
      auditBucketName: 'lanyard-prod-audit-0123',
      alarmTopicArn: expect.stringMatching(/^arn:aws:sns:/),
      region: 'eu-west-1',
    });
  });
});
