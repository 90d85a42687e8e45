// The same program under a throwaway stack's configuration (as in Pulumi.dev.yaml) plus the
// production options: the settings must reach the resources.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadStack, type LoadedStack } from './stack-under-mocks';

let stack: LoadedStack;
beforeAll(async () => {
  stack = await loadStack(
    {
      'lanyard:deletionProtection': 'false',
      'lanyard:secretRecoveryDays': '0',
      'lanyard:dbMultiAz': 'true',
      'lanyard:dbInstanceClass': 'db.t4g.small',
      'lanyard:apiReservedConcurrency': '50',
      'lanyard:logRetentionDays': '14',
      'lanyard:throttleRateLimit': '25',
      'lanyard:throttleBurstLimit': '50',
      'lanyard:domainName': 'auth.example.com',
      'lanyard:certificateArn': 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
      'lanyard:alarmEmail': 'ops@example.com',
      'lanyard:refreshReuseLeeway': '10',
    },
    'dev',
  );
});

describe('a disposable stack with a custom domain', () => {
  it('can be destroyed: no deletion protection, no final snapshot, no protect, secrets deleted at once', () => {
    const db = stack.one('aws:rds/instance:Instance');
    expect(db.inputs).toMatchObject({
      identifier: 'lanyard-dev',
      deletionProtection: false,
      skipFinalSnapshot: true,
      multiAz: true,
      instanceClass: 'db.t4g.small',
    });
    expect(db.inputs.finalSnapshotIdentifier).toBeUndefined();
    expect(db.protect).toBe(false);
    const secrets = stack.byType('aws:secretsmanager/secret:Secret');
    expect(secrets.map((s) => s.name).sort()).toEqual([
      'secrets-app-db',
      'secrets-session-keys',
      'secrets-signing-keys',
    ]);
    for (const secret of secrets) expect(secret.inputs.recoveryWindowInDays).toBe(0);
    // The audit bucket is emptied on destroy only in a stack without deletion protection.
    expect(stack.one('aws:s3/bucket:Bucket').inputs.forceDestroy).toBe(true);
  });

  it('applies retention, throttling and concurrency from the config', () => {
    for (const g of stack.byType('aws:cloudwatch/logGroup:LogGroup')) expect(g.inputs.retentionInDays).toBe(14);
    expect(stack.one('aws:apigatewayv2/stage:Stage').inputs.defaultRouteSettings).toMatchObject({
      throttlingRateLimit: 25,
      throttlingBurstLimit: 50,
    });
    expect(stack.one('aws:lambda/function:Function', 'api-fn').inputs.reservedConcurrentExecutions).toBe(50);
    // The refresh retry leeway reaches the API function (and only it: nothing else issues tokens).
    expect(stack.one('aws:lambda/function:Function', 'api-fn').inputs.environment.variables.REFRESH_REUSE_LEEWAY).toBe(
      '10',
    );
  });

  it('serves on the custom domain only, and mails the alarms', () => {
    expect(stack.one('aws:apigatewayv2/api:Api').inputs.disableExecuteApiEndpoint).toBe(true);
    expect(stack.one('aws:apigatewayv2/domainName:DomainName').inputs).toMatchObject({
      domainName: 'auth.example.com',
      domainNameConfiguration: {
        certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
        endpointType: 'REGIONAL',
        securityPolicy: 'TLS_1_2',
      },
    });
    expect(stack.one('aws:apigatewayv2/apiMapping:ApiMapping').inputs.stage).toBe('$default');
    expect(stack.one('aws:lambda/function:Function', 'api-fn').inputs.environment.variables.PUBLIC_URL).toBe(
      'https://auth.example.com',
    );
    expect(stack.outputs.apiUrl).toBe('https://auth.example.com');
    expect(stack.outputs.apiDomainTarget).toBe('d-abc.execute-api.eu-west-1.amazonaws.com');
    expect(stack.one('aws:sns/topicSubscription:TopicSubscription').inputs).toMatchObject({
      protocol: 'email',
      endpoint: 'ops@example.com',
    });
  });
});
