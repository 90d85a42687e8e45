// lanyard:rdsProxy under mocks: the proxy sits between every function and the database (TLS
// required, credentials from the database users' secrets through a role that may read only those), the database accepts the proxy, the pool is capped, and the API's reserved
// concurrency is checked against the proxy's connection budget instead of max_connections.
import { beforeAll, describe, expect, it } from 'vitest';
import { parseStackConfig, StackConfigError } from '../../infra/config';
import { loadStack, type LoadedStack } from './stack-under-mocks';

let stack: LoadedStack;
beforeAll(async () => {
  stack = await loadStack({ 'lanyard:rdsProxy': 'true', 'lanyard:apiReservedConcurrency': '200' });
});

const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-0123-4567-AbCdEf';
const APP_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/app-db-AbCdEf';

describe('RDS Proxy', () => {
  it("is a PostgreSQL proxy requiring TLS, signing in with both database users' secrets, in the isolated subnets", () => {
    const proxy = stack.one('aws:rds/proxy:Proxy');
    expect(proxy.inputs).toMatchObject({
      name: 'lanyard-prod-db-proxy',
      engineFamily: 'POSTGRESQL',
      requireTls: true,
      debugLogging: false,
      vpcSubnetIds: ['network-isolated-0-id', 'network-isolated-1-id'],
      vpcSecurityGroupIds: ['database-proxy-sg-id'],
      // The migration function signs in as the master user; the API and admin as lanyard_app.
      auths: [
        { authScheme: 'SECRETS', secretArn: SECRET, iamAuth: 'DISABLED' },
        { authScheme: 'SECRETS', secretArn: APP_SECRET, iamAuth: 'DISABLED' },
      ],
      roleArn: 'arn:aws:iam::123456789012:role/database-proxy-role',
    });
  });

  it('has a role only RDS may assume, reading exactly those two secrets', () => {
    const role = stack.one('aws:iam/role:Role', 'database-proxy-role');
    expect(JSON.parse(role.inputs.assumeRolePolicy).Statement).toEqual([
      { Effect: 'Allow', Principal: { Service: 'rds.amazonaws.com' }, Action: 'sts:AssumeRole' },
    ]);
    const policy = stack.one('aws:iam/rolePolicy:RolePolicy', 'database-proxy-secret');
    expect(JSON.parse(policy.inputs.policy).Statement).toEqual([
      { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: [SECRET, APP_SECRET] },
    ]);
  });

  it('targets the database with a capped pool (90% of max_connections, half of it idle at most)', () => {
    expect(stack.one('aws:rds/proxyDefaultTargetGroup:ProxyDefaultTargetGroup').inputs).toMatchObject({
      dbProxyName: 'lanyard-prod-db-proxy',
      connectionPoolConfig: { maxConnectionsPercent: 90, maxIdleConnectionsPercent: 45, connectionBorrowTimeout: 30 },
    });
    expect(stack.one('aws:rds/proxyTarget:ProxyTarget').inputs).toMatchObject({
      dbProxyName: 'lanyard-prod-db-proxy',
      dbInstanceIdentifier: 'lanyard-prod',
    });
  });

  it('is reachable on 5432 from the functions only, and the database accepts it', () => {
    const ingress = stack.byType('aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule').map((r) => r.inputs);
    expect(ingress).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          securityGroupId: 'database-proxy-sg-id',
          referencedSecurityGroupId: 'network-functions-id',
          fromPort: 5432,
          toPort: 5432,
        }),
        expect.objectContaining({
          securityGroupId: 'database-db-id',
          referencedSecurityGroupId: 'database-proxy-sg-id',
          fromPort: 5432,
          toPort: 5432,
        }),
      ]),
    );
    const egress = stack
      .byType('aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule')
      .filter((r) => r.inputs.securityGroupId === 'database-proxy-sg-id');
    expect(egress.map((r) => r.inputs)).toEqual([
      expect.objectContaining({ referencedSecurityGroupId: 'database-db-id', fromPort: 5432, toPort: 5432 }),
    ]);
  });

  it('every function connects to the proxy endpoint, without named prepared statements (they pin sessions); the API keeps its reservation of 200', () => {
    for (const name of ['api-fn', 'migrations-fn', 'admin-fn']) {
      const fn = stack.one('aws:lambda/function:Function', name);
      expect(fn.inputs.environment.variables.DB_HOST).toBe(
        'lanyard-prod-db-proxy.proxy-abcdefghijkl.eu-west-1.rds.amazonaws.com',
      );
      expect(fn.inputs.environment.variables.DB_PREPARED_STATEMENTS).toBe('false');
    }
    expect(stack.one('aws:lambda/function:Function', 'api-fn').inputs.reservedConcurrentExecutions).toBe(200);
  });
});

describe('the reservation is sized to the connection budget', () => {
  // db.t4g.micro: max_connections = floor(0.9 GiB / 9531392) = 101. Direct: 101 - 10 = 91 API
  // instances. Through the proxy: floor(101 × 90%) = 90 pooled connections, 3 kept for the
  // migration and admin functions, 3 instances per connection: (90 - 3) × 3 = 261.
  const config = (extra: Record<string, string>) =>
    parseStackConfig('prod', { dbInstanceClass: 'db.t4g.micro', ...extra } as never);

  it('without the proxy, 92 instances are refused', () => {
    expect(config({ apiReservedConcurrency: '91' }).apiReservedConcurrency).toBe(91);
    expect(() => config({ apiReservedConcurrency: '92' })).toThrow(StackConfigError);
    expect(() => config({ apiReservedConcurrency: '92' })).toThrow(
      'lanyard:apiReservedConcurrency 92 exceeds what db.t4g.micro can serve (max_connections ≈ 101, 91 for the API); choose a larger instance class, lanyard:rdsProxy or a lower reservation',
    );
  });

  it('through the proxy, up to 261', () => {
    expect(config({ rdsProxy: 'true', apiReservedConcurrency: '261' }).apiReservedConcurrency).toBe(261);
    expect(() => config({ rdsProxy: 'true', apiReservedConcurrency: '262' })).toThrow(
      'lanyard:apiReservedConcurrency 262 exceeds what db.t4g.micro can serve (max_connections ≈ 101, 261 for the API through RDS Proxy); choose a larger instance class or a lower reservation',
    );
  });
});
