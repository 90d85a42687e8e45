// Synthetic API Gateway HTTP API (payload format 2.0) events, as Lambda receives them.
// X-Forwarded-For is built the way API Gateway builds it: whatever the client sent
// (`clientForwardedFor`, which the client controls), then the real peer address (`sourceIp`)
// appended. So a test can send a header whose left-most entry differs from sourceIp.
export function httpApiEvent(opts: {
  method: string;
  path: string;
  query?: string;
  headers?: Record<string, string>;
  body?: string;
  isBase64Encoded?: boolean;
  /** The TCP peer API Gateway saw; default 203.0.113.7. */
  sourceIp?: string;
  /** The X-Forwarded-For value the client itself sent (API Gateway appends sourceIp to it). */
  clientForwardedFor?: string;
  /** requestContext.requestId; default req-1. */
  requestId?: string;
}) {
  const sourceIp = opts.sourceIp ?? '203.0.113.7';
  const headers = {
    host: 'abc123.execute-api.eu-west-1.amazonaws.com',
    'x-forwarded-proto': 'https',
    'x-forwarded-for': opts.clientForwardedFor ? `${opts.clientForwardedFor}, ${sourceIp}` : sourceIp,
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
      http: { method: opts.method, path: opts.path, protocol: 'HTTP/1.1', sourceIp, userAgent: 'test' },
      requestId: opts.requestId ?? 'req-1',
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
