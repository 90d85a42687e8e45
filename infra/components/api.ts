// Api: the service function behind its public front, chosen by `lanyard:edge`:
// - httpApi (default): an API Gateway HTTP API. `$default` stage (so Fastify sees the real paths),
//   route throttling, JSON access logs. Cheapest, but its throttle is one bucket for everyone, and
//   AWS WAF cannot attach to an HTTP API.
// - waf: a regional REST API (Lambda proxy, payload 1.0) with an AWS WAF web ACL whose rate-based
//   rules count requests per client address (WAF sees the TCP peer; no header is trusted): one
//   rule for every path, a stricter one for the credential endpoints. Blocked requests are logged
//   with credentials redacted. See the README's deploy guide for the cost of each.
// Both: the invoke permission limited to this API, an optional custom domain. The function's
// reserved concurrency is the database connection budget (one connection per instance).
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import type { ApiMetrics } from './observability';
import { createServiceFunction, type FunctionArgs, functionArgs } from './service-function';

export interface ApiArgs extends FunctionArgs {
  memoryMb: number;
  reservedConcurrency: number;
  throttleRateLimit: number;
  throttleBurstLimit: number;
  domainName?: string;
  certificateArn?: string;
  edge: 'httpApi' | 'waf';
  /** `waf` edge: requests per client address per 5 minutes (all paths / credential endpoints). */
  wafRateLimit: number;
  wafCredentialRateLimit: number;
  /** The migration invocation: traffic moves only after the schema is current. */
  dependsOn?: pulumi.Input<pulumi.Resource>[];
}

/** The access log line: one JSON object per request. */
export const ACCESS_LOG_FORMAT = JSON.stringify({
  requestId: '$context.requestId',
  time: '$context.requestTime',
  ip: '$context.identity.sourceIp',
  method: '$context.httpMethod',
  path: '$context.path',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  integrationLatencyMs: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  userAgent: '$context.identity.userAgent',
});

/** HTTP API integrations time out at 30 s; the function gives up just before. */
export const API_TIMEOUT_SECONDS = 29;

/** The REST API's stage (part of its execute-api URL; a custom domain hides it). */
export const REST_STAGE = 'live';

/** The credential endpoints WAF limits more strictly (any stage prefix, optional trailing slash). */
export const CREDENTIAL_PATHS_REGEX = '/(oauth/token|users/sign_in)/?$';

/** Never written to WAF's logs: credentials travel in these. */
export const WAF_REDACTED_HEADERS = ['authorization', 'cookie', 'private-token'];

export class Api extends pulumi.ComponentResource {
  readonly url: pulumi.Output<string>;
  readonly apiId: pulumi.Output<string>;
  readonly stageName: pulumi.Output<string>;
  readonly functionName: pulumi.Output<string>;
  readonly functionArn: pulumi.Output<string>;
  /** The function's log group (the app's JSON lines). */
  readonly functionLogGroupName: pulumi.Output<string>;
  /** HTTP API access logs (the `waf` edge logs blocked requests in WAF instead). */
  readonly accessLogGroupName: pulumi.Output<string | undefined>;
  /** With a custom domain: the host name its CNAME (or alias) must point at. */
  readonly domainTarget: pulumi.Output<string | undefined>;
  readonly metrics: ApiMetrics;
  /** The `waf` edge's web ACL name. */
  readonly webAclName: pulumi.Output<string | undefined>;

  constructor(name: string, args: ApiArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Api', name, {}, opts);
    const region = aws.getRegionOutput({}, { parent: this });

    // The front door's id is needed for the function's PUBLIC_URL, so the API comes first.
    const front =
      args.edge === 'waf'
        ? new aws.apigateway.RestApi(
            `${name}-rest`,
            {
              name: args.functionName,
              description: 'Lanyard: OAuth 2.0 provider and GitLab-compatible API (behind AWS WAF)',
              endpointConfiguration: { types: 'REGIONAL' },
              // With a custom domain, the execute-api host stops answering: one public URL.
              disableExecuteApiEndpoint: Boolean(args.domainName),
              tags: args.tags,
            },
            { parent: this },
          )
        : new aws.apigatewayv2.Api(
            `${name}-http`,
            {
              name: args.functionName,
              protocolType: 'HTTP',
              description: 'Lanyard: OAuth 2.0 provider and GitLab-compatible API',
              disableExecuteApiEndpoint: Boolean(args.domainName),
              tags: args.tags,
            },
            { parent: this },
          );

    const publicUrl = args.domainName
      ? pulumi.output(`https://${args.domainName}`)
      : front instanceof aws.apigateway.RestApi
        ? pulumi.interpolate`https://${front.id}.execute-api.${region.region}.amazonaws.com/${REST_STAGE}`
        : front.apiEndpoint;

    const { fn, logGroup } = createServiceFunction(
      name,
      {
        ...functionArgs(args),
        description:
          args.edge === 'waf'
            ? 'Lanyard API (Fastify behind an API Gateway REST API and AWS WAF)'
            : 'Lanyard API (Fastify behind API Gateway HTTP API)',
        memoryMb: args.memoryMb,
        timeoutSeconds: API_TIMEOUT_SECONDS,
        reservedConcurrency: args.reservedConcurrency,
        environment: { ...args.environment, PUBLIC_URL: publicUrl },
      },
      this,
    );

    // Only this API (any stage, any route) may invoke the function.
    new aws.lambda.Permission(
      `${name}-invoke`,
      {
        action: 'lambda:InvokeFunction',
        function: fn.name,
        principal: 'apigateway.amazonaws.com',
        sourceArn: pulumi.interpolate`${front.executionArn}/*`,
      },
      { parent: this },
    );

    const built =
      front instanceof aws.apigateway.RestApi
        ? this.restApiFront(name, args, front, fn)
        : this.httpApiFront(name, args, front, fn);

    this.url = publicUrl;
    this.apiId = front.id;
    this.stageName = built.stageName;
    this.functionName = fn.name;
    this.functionArn = fn.arn;
    this.functionLogGroupName = logGroup.name;
    this.accessLogGroupName = built.accessLogGroupName;
    this.domainTarget = built.domainTarget;
    this.metrics = built.metrics;
    this.webAclName = built.webAclName;
    this.registerOutputs({ url: this.url, apiId: this.apiId, functionName: this.functionName });
  }

  private httpApiFront(name: string, args: ApiArgs, api: aws.apigatewayv2.Api, fn: aws.lambda.Function) {
    const parent = { parent: this };
    const accessLogs = new aws.cloudwatch.LogGroup(
      `${name}-access-log`,
      {
        name: pulumi.interpolate`/aws/apigateway/${args.functionName}/access`,
        retentionInDays: args.logRetentionDays,
        tags: args.tags,
      },
      parent,
    );

    const integration = new aws.apigatewayv2.Integration(
      `${name}-lambda`,
      {
        apiId: api.id,
        integrationType: 'AWS_PROXY',
        integrationUri: fn.invokeArn,
        payloadFormatVersion: '2.0',
        timeoutMilliseconds: 30_000,
      },
      parent,
    );

    const route = new aws.apigatewayv2.Route(
      `${name}-default-route`,
      {
        apiId: api.id,
        routeKey: '$default',
        target: pulumi.interpolate`integrations/${integration.id}`,
      },
      parent,
    );

    const stage = new aws.apigatewayv2.Stage(
      `${name}-default-stage`,
      {
        apiId: api.id,
        name: '$default',
        autoDeploy: true,
        defaultRouteSettings: {
          throttlingRateLimit: args.throttleRateLimit,
          throttlingBurstLimit: args.throttleBurstLimit,
          detailedMetricsEnabled: false,
        },
        accessLogSettings: { destinationArn: accessLogs.arn, format: ACCESS_LOG_FORMAT },
        tags: args.tags,
      },
      { parent: this, dependsOn: [route] },
    );

    let domainTarget: pulumi.Output<string | undefined> = pulumi.output(undefined);
    if (args.domainName && args.certificateArn) {
      const domain = new aws.apigatewayv2.DomainName(
        `${name}-domain`,
        {
          domainName: args.domainName,
          domainNameConfiguration: {
            certificateArn: args.certificateArn,
            endpointType: 'REGIONAL',
            securityPolicy: 'TLS_1_2',
          },
          tags: args.tags,
        },
        parent,
      );
      new aws.apigatewayv2.ApiMapping(
        `${name}-mapping`,
        { apiId: api.id, domainName: domain.domainName, stage: stage.name },
        parent,
      );
      domainTarget = domain.domainNameConfiguration.targetDomainName;
    }
    const metrics: ApiMetrics = {
      namespace: 'AWS/ApiGateway',
      clientErrors: '4xx',
      serverErrors: '5xx',
      dimensions: { ApiId: api.id, Stage: '$default' },
    };
    return {
      stageName: stage.name,
      accessLogGroupName: accessLogs.name as pulumi.Output<string | undefined>,
      domainTarget,
      metrics,
      webAclName: pulumi.output(undefined) as pulumi.Output<string | undefined>,
    };
  }

  private restApiFront(name: string, args: ApiArgs, api: aws.apigateway.RestApi, fn: aws.lambda.Function) {
    const parent = { parent: this };
    // `/` and `/{proxy+}`, any method, both proxied to the function (payload 1.0).
    const proxy = new aws.apigateway.Resource(
      `${name}-proxy`,
      { restApi: api.id, parentId: api.rootResourceId, pathPart: '{proxy+}' },
      parent,
    );
    const routes = [
      { key: 'root', resourceId: api.rootResourceId },
      { key: 'proxy', resourceId: proxy.id },
    ].map(({ key, resourceId }) => {
      const method = new aws.apigateway.Method(
        `${name}-${key}-any`,
        { restApi: api.id, resourceId, httpMethod: 'ANY', authorization: 'NONE' },
        parent,
      );
      const integration = new aws.apigateway.Integration(
        `${name}-${key}-lambda`,
        {
          restApi: api.id,
          resourceId,
          httpMethod: method.httpMethod,
          type: 'AWS_PROXY',
          integrationHttpMethod: 'POST',
          uri: fn.invokeArn,
          timeoutMilliseconds: 29_000,
        },
        parent,
      );
      return [method, integration];
    });

    const deployment = new aws.apigateway.Deployment(
      `${name}-deployment`,
      {
        restApi: api.id,
        description: 'Lanyard: every path proxied to the API function',
        // A new deployment whenever the routes change (REST APIs serve a snapshot).
        triggers: { routes: 'root-any+proxy-any:aws_proxy:v1' },
      },
      { parent: this, dependsOn: routes.flat() },
    );
    const stage = new aws.apigateway.Stage(
      `${name}-stage`,
      { restApi: api.id, stageName: REST_STAGE, deployment: deployment.id, tags: args.tags },
      parent,
    );
    // Stage-wide throttle as on the HTTP API (WAF adds the per-address limits in front).
    new aws.apigateway.MethodSettings(
      `${name}-throttle`,
      {
        restApi: api.id,
        stageName: stage.stageName,
        methodPath: '*/*',
        settings: {
          throttlingRateLimit: args.throttleRateLimit,
          throttlingBurstLimit: args.throttleBurstLimit,
          metricsEnabled: true,
          loggingLevel: 'OFF',
        },
      },
      parent,
    );

    const visibility = (metricName: string) => ({
      cloudwatchMetricsEnabled: true,
      sampledRequestsEnabled: true,
      metricName,
    });
    const acl = new aws.wafv2.WebAcl(
      `${name}-waf`,
      {
        name: args.functionName,
        description: 'Lanyard: per-client-address rate limits',
        scope: 'REGIONAL',
        defaultAction: { allow: {} },
        rules: [
          {
            name: 'credential-endpoints-per-address',
            priority: 0,
            action: { block: {} },
            statement: {
              rateBasedStatement: {
                limit: args.wafCredentialRateLimit,
                evaluationWindowSec: 300,
                aggregateKeyType: 'IP',
                scopeDownStatement: {
                  regexMatchStatement: {
                    regexString: CREDENTIAL_PATHS_REGEX,
                    fieldToMatch: { uriPath: {} },
                    textTransformations: [{ priority: 0, type: 'NONE' }],
                  },
                },
              },
            },
            visibilityConfig: visibility('credential-endpoints-per-address'),
          },
          {
            name: 'all-paths-per-address',
            priority: 1,
            action: { block: {} },
            statement: {
              rateBasedStatement: { limit: args.wafRateLimit, evaluationWindowSec: 300, aggregateKeyType: 'IP' },
            },
            visibilityConfig: visibility('all-paths-per-address'),
          },
        ],
        visibilityConfig: visibility(args.functionName),
        tags: args.tags,
      },
      parent,
    );
    new aws.wafv2.WebAclAssociation(`${name}-waf-stage`, { webAclArn: acl.arn, resourceArn: stage.arn }, parent);

    // WAF requires the aws-waf-logs- prefix. Only blocked requests, credentials redacted.
    const wafLogs = new aws.cloudwatch.LogGroup(
      `${name}-waf-log`,
      {
        name: `aws-waf-logs-${args.functionName}`,
        retentionInDays: args.logRetentionDays,
        tags: args.tags,
      },
      parent,
    );
    new aws.wafv2.WebAclLoggingConfiguration(
      `${name}-waf-logging`,
      {
        resourceArn: acl.arn,
        logDestinationConfigs: [wafLogs.arn],
        redactedFields: [
          ...WAF_REDACTED_HEADERS.map((header) => ({ singleHeader: { name: header } })),
          { queryString: {} },
        ],
        loggingFilter: {
          defaultBehavior: 'DROP',
          filters: [
            { behavior: 'KEEP', requirement: 'MEETS_ANY', conditions: [{ actionCondition: { action: 'BLOCK' } }] },
          ],
        },
      },
      parent,
    );

    let domainTarget: pulumi.Output<string | undefined> = pulumi.output(undefined);
    if (args.domainName && args.certificateArn) {
      const domain = new aws.apigateway.DomainName(
        `${name}-domain`,
        {
          domainName: args.domainName,
          regionalCertificateArn: args.certificateArn,
          endpointConfiguration: { types: 'REGIONAL' },
          securityPolicy: 'TLS_1_2',
          tags: args.tags,
        },
        parent,
      );
      new aws.apigateway.BasePathMapping(
        `${name}-mapping`,
        { restApi: api.id, stageName: stage.stageName, domainName: domain.domainName },
        parent,
      );
      domainTarget = domain.regionalDomainName;
    }
    const metrics: ApiMetrics = {
      namespace: 'AWS/ApiGateway',
      clientErrors: '4XXError',
      serverErrors: '5XXError',
      dimensions: { ApiName: api.name, Stage: REST_STAGE },
    };
    return {
      stageName: stage.stageName,
      accessLogGroupName: pulumi.output(undefined) as pulumi.Output<string | undefined>,
      domainTarget: domainTarget,
      metrics,
      webAclName: acl.name as pulumi.Output<string | undefined>,
    };
  }
}
