// Synthetic API Gateway HTTP API (payload format 2.0) events, as Lambda receives them.
export function httpApiEvent(opts: {
  method: string;
  path: string;
  query?: string;
  headers?: Record<string, string>;
  body?: string;
  isBase64Encoded?: boolean;
}) {
  const headers = {
    host: 'abc123.execute-api.eu-west-1.amazonaws.com',
    'x-forwarded-proto': 'https',
    'x-forwarded-for': '203.0.113.7',
    ...(opts.headers ?? {}),
  };
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: opts.path,
    rawQueryString: opts.query ?? '',
    headers,
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: headers.host,
      domainPrefix: 'abc123',
      http: { method: opts.method, path: opts.path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'test' },
      requestId: 'req-1',
      routeKey: '$default',
      stage: '$default',
      time: '21/Nov/2026:09:20:00 +0000',
      timeEpoch: 1763716800000,
    },
    body: opts.body,
    isBase64Encoded: opts.isBase64Encoded ?? false,
  };
}

export const lambdaContext = {
  awsRequestId: 'req-1',
  functionName: 'lanyard-api',
  getRemainingTimeInMillis: () => 30_000,
} as any;
