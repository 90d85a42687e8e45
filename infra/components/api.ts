// Api: the service function behind an API Gateway HTTP API. `$default` stage (so Fastify sees
// the real paths), route throttling, JSON access logs, the invoke permission limited to this
// API, an optional custom domain. The function's reserved concurrency is the database
// connection budget (one connection per instance).
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import { createServiceFunction, type FunctionArgs, functionArgs } from './service-function';

export interface ApiArgs extends FunctionArgs {
  memoryMb: number;
  reservedConcurrency: number;
  throttleRateLimit: number;
  throttleBurstLimit: number;
  domainName?: string;
  certificateArn?: string;
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

export class Api extends pulumi.ComponentResource {
  readonly url: pulumi.Output<string>;
  readonly apiId: pulumi.Output<string>;
  readonly stageName: pulumi.Output<string>;
  readonly functionName: pulumi.Output<string>;
  readonly functionArn: pulumi.Output<string>;
  readonly accessLogGroupName: pulumi.Output<string>;
  /** With a custom domain: the host name its CNAME (or alias) must point at. */
  readonly domainTarget: pulumi.Output<string | undefined>;

  constructor(name: string, args: ApiArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Api', name, {}, opts);
    const parent = { parent: this };

    const api = new aws.apigatewayv2.Api(
      `${name}-http`,
      {
        name: args.functionName,
        protocolType: 'HTTP',
        description: 'Lanyard: OAuth 2.0 provider and GitLab-compatible API',
        // With a custom domain, the execute-api host stops answering: one public URL.
        disableExecuteApiEndpoint: Boolean(args.domainName),
        tags: args.tags,
      },
      parent,
    );

    const publicUrl = args.domainName ? pulumi.output(`https://${args.domainName}`) : api.apiEndpoint;

    const { fn } = createServiceFunction(
      name,
      {
        ...functionArgs(args),
        description: 'Lanyard API (Fastify behind API Gateway HTTP API)',
        memoryMb: args.memoryMb,
        timeoutSeconds: API_TIMEOUT_SECONDS,
        reservedConcurrency: args.reservedConcurrency,
        environment: { ...args.environment, PUBLIC_URL: publicUrl },
      },
      this,
    );

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

    // Only this API (any stage, any route) may invoke the function.
    new aws.lambda.Permission(
      `${name}-invoke`,
      {
        action: 'lambda:InvokeFunction',
        function: fn.name,
        principal: 'apigateway.amazonaws.com',
        sourceArn: pulumi.interpolate`${api.executionArn}/*`,
      },
      parent,
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
    this.domainTarget = domainTarget;

    this.url = publicUrl;
    this.apiId = api.id;
    this.stageName = stage.name;
    this.functionName = fn.name;
    this.functionArn = fn.arn;
    this.accessLogGroupName = accessLogs.name;
    this.registerOutputs({ url: this.url, apiId: this.apiId, functionName: this.functionName });
  }
}
