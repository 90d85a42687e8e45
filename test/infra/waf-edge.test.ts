// `lanyard:edge = waf` under mocks: a regional REST API proxying every path to the API function,
// behind an AWS WAF web ACL whose rate-based rules count requests per client address.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadStack, type LoadedStack } from './stack-under-mocks';

let stack: LoadedStack;
beforeAll(async () => {
  stack = await loadStack({
    'lanyard:edge': 'waf',
    'lanyard:wafRateLimit': '600',
    'lanyard:wafCredentialRateLimit': '50',
  });
});

describe('the waf edge', () => {
  it('replaces the HTTP API with a regional REST API proxying / and /{proxy+} to the function', () => {
    expect(stack.byType('aws:apigatewayv2/api:Api')).toHaveLength(0);
    expect(stack.byType('aws:apigatewayv2/stage:Stage')).toHaveLength(0);
    expect(stack.one('aws:apigateway/restApi:RestApi').inputs).toMatchObject({
      name: 'lanyard-prod-api',
      endpointConfiguration: { types: 'REGIONAL' },
      disableExecuteApiEndpoint: false,
    });
    expect(stack.one('aws:apigateway/resource:Resource').inputs).toMatchObject({
      parentId: 'root-resource',
      pathPart: '{proxy+}',
    });
    const methods = stack.byType('aws:apigateway/method:Method').map((m) => m.inputs);
    expect(methods.map((m) => [m.resourceId, m.httpMethod, m.authorization])).toEqual([
      ['root-resource', 'ANY', 'NONE'],
      ['api-proxy-id', 'ANY', 'NONE'],
    ]);
    const integrations = stack.byType('aws:apigateway/integration:Integration').map((i) => i.inputs);
    for (const i of integrations) {
      expect(i).toMatchObject({
        type: 'AWS_PROXY',
        integrationHttpMethod: 'POST',
        uri: 'arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:lanyard-prod-api/invocations',
      });
    }
    expect(integrations).toHaveLength(2);
    expect(stack.one('aws:apigateway/deployment:Deployment').dependsOn).toEqual(
      expect.arrayContaining(['api-root-any', 'api-proxy-any', 'api-root-lambda', 'api-proxy-lambda']),
    );
    expect(stack.one('aws:apigateway/stage:Stage').inputs).toMatchObject({
      stageName: 'live',
      deployment: 'api-deployment-id',
    });
    expect(stack.one('aws:apigateway/methodSettings:MethodSettings').inputs).toMatchObject({
      methodPath: '*/*',
      settings: { throttlingRateLimit: 100, throttlingBurstLimit: 200, metricsEnabled: true, loggingLevel: 'OFF' },
    });
    // API Gateway's permission on the API function (the other one is EventBridge's, on the prune function).
    const apiPermissions = stack
      .byType('aws:lambda/permission:Permission')
      .filter((p) => p.inputs.principal === 'apigateway.amazonaws.com');
    expect(apiPermissions.map((p) => p.inputs)).toEqual([
      expect.objectContaining({ sourceArn: 'arn:aws:execute-api:eu-west-1:123456789012:rest123/*' }),
    ]);
    expect(stack.outputs.apiUrl).toBe('https://api-rest-id.execute-api.eu-west-1.amazonaws.com/live');
    expect(stack.one('aws:lambda/function:Function', 'api-fn').inputs.environment.variables.PUBLIC_URL).toBe(
      'https://api-rest-id.execute-api.eu-west-1.amazonaws.com/live',
    );
  });

  it('puts a regional web ACL on the stage: per-address limits for the credential endpoints and for everything', () => {
    const acl = stack.one('aws:wafv2/webAcl:WebAcl').inputs;
    expect(acl).toMatchObject({ name: 'lanyard-prod-api', scope: 'REGIONAL', defaultAction: { allow: {} } });
    expect(acl.rules).toEqual([
      expect.objectContaining({
        name: 'credential-endpoints-per-address',
        priority: 0,
        action: { block: {} },
        statement: {
          rateBasedStatement: {
            limit: 50,
            evaluationWindowSec: 300,
            aggregateKeyType: 'IP',
            scopeDownStatement: {
              regexMatchStatement: {
                regexString: '/(oauth/token|users/sign_in)/?$',
                fieldToMatch: { uriPath: {} },
                textTransformations: [{ priority: 0, type: 'NONE' }],
              },
            },
          },
        },
      }),
      expect.objectContaining({
        name: 'all-paths-per-address',
        priority: 1,
        action: { block: {} },
        statement: { rateBasedStatement: { limit: 600, evaluationWindowSec: 300, aggregateKeyType: 'IP' } },
      }),
    ]);
    // IP: WAF's own view of the TCP peer. Never FORWARDED_IP (a header the client writes).
    expect(JSON.stringify(acl.rules)).not.toContain('FORWARDED_IP');
    expect(stack.one('aws:wafv2/webAclAssociation:WebAclAssociation').inputs).toEqual({
      webAclArn: 'arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/lanyard-prod-api/0123',
      resourceArn: 'arn:aws:apigateway:eu-west-1::/restapis/rest123/stages/live',
    });
  });

  it('logs blocked requests only, with credentials redacted, into a log group with retention', () => {
    const logging = stack.one('aws:wafv2/webAclLoggingConfiguration:WebAclLoggingConfiguration').inputs;
    expect(logging.logDestinationConfigs).toEqual([
      'arn:aws:logs:eu-west-1:123456789012:log-group:aws-waf-logs-lanyard-prod-api',
    ]);
    expect(logging.redactedFields).toEqual([
      { singleHeader: { name: 'authorization' } },
      { singleHeader: { name: 'cookie' } },
      { singleHeader: { name: 'private-token' } },
      { queryString: {} },
    ]);
    expect(logging.loggingFilter).toEqual({
      defaultBehavior: 'DROP',
      filters: [{ behavior: 'KEEP', requirement: 'MEETS_ANY', conditions: [{ actionCondition: { action: 'BLOCK' } }] }],
    });
    const group = stack
      .byType('aws:cloudwatch/logGroup:LogGroup')
      .find((g) => g.inputs.name.startsWith('aws-waf-logs-'));
    expect(group?.inputs.retentionInDays).toBe(30);
  });

  it("alarms on the REST API's 4XXError/5XXError and on WAF blocks", () => {
    const alarms = stack.byType('aws:cloudwatch/metricAlarm:MetricAlarm').map((a) => a.inputs);
    const api = alarms.filter((a) => a.namespace === 'AWS/ApiGateway');
    expect(api.map((a) => [a.metricName, a.dimensions])).toEqual([
      ['4XXError', { ApiName: 'lanyard-prod-api', Stage: 'live' }],
      ['5XXError', { ApiName: 'lanyard-prod-api', Stage: 'live' }],
    ]);
    expect(alarms.find((a) => a.namespace === 'AWS/WAFV2')).toMatchObject({
      metricName: 'BlockedRequests',
      dimensions: { WebACL: 'lanyard-prod-api', Region: 'eu-west-1', Rule: 'ALL' },
    });
    expect(stack.outputs.edge).toBe('waf');
  });
});
