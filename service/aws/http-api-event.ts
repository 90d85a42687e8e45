// API Gateway proxy events (HTTP API payload 2.0, and REST API payload 1.0 behind the `waf` edge)
// → what @fastify/aws-lambda hands to Fastify.
// @fastify/aws-lambda builds the query from `queryStringParameters`, which API Gateway has
// already decoded and comma-joined for repeated keys, and by default splits every value that
// contains a comma into an array: `state=a,b` or a redirect_uri with a comma would arrive as
// arrays, and a value holding a literal %xx would be decoded twice. Handing Fastify the raw
// query string instead gives exactly the parsing of `npm start`.
//
// The client address: API Gateway's own view of the TCP peer (`requestContext.http.sourceIp`, or
// `requestContext.identity.sourceIp` on a REST API), which @fastify/aws-lambda passes to Fastify
// as the remote address. The Lambda app trusts no proxy header: API Gateway APPENDS the peer to
// whatever X-Forwarded-For the client sent, so its left-most entry is the client's to choose, and
// with the HTTP API or the regional REST API there is no proxy of ours in front that could vouch
// for any other entry. (Behind CloudFront exactly one hop would have to be trusted, and only with
// the execute-api endpoint unreachable except through it: not the design here.)

export interface HttpApiV2Event {
  version?: string;
  rawPath?: string;
  rawQueryString?: string;
  queryStringParameters?: Record<string, string>;
  requestContext?: { requestId?: string; [key: string]: unknown };
  [key: string]: unknown;
}

export interface RestApiV1Event {
  httpMethod?: string;
  path?: string;
  queryStringParameters?: Record<string, string> | null;
  multiValueQueryStringParameters?: Record<string, string[]> | null;
  requestContext?: { requestId?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** RFC 3986 encoding of one decoded query name or value (a space as %20, which Fastify decodes back). */
const encode = (s: string) => encodeURIComponent(s);

export function withRawQueryString<E>(event: E): E {
  const e = event as HttpApiV2Event & RestApiV1Event;
  if (!e || typeof e !== 'object') return event;
  if (e.version === '2.0' && typeof e.rawPath === 'string') {
    const { queryStringParameters: _decoded, ...rest } = e;
    return { ...rest, rawPath: e.rawQueryString ? `${e.rawPath}?${e.rawQueryString}` : e.rawPath } as E;
  }
  // REST API (1.0): no raw query string is given; re-encode the decoded multi-value parameters,
  // which keep repeated keys apart and never split on commas.
  if (typeof e.httpMethod === 'string' && typeof e.path === 'string') {
    const multi = e.multiValueQueryStringParameters ?? {};
    const query = Object.entries(multi)
      .flatMap(([k, values]) => (values ?? []).map((v) => `${encode(k)}=${encode(v)}`))
      .join('&');
    const { queryStringParameters: _q, multiValueQueryStringParameters: _m, ...rest } = e;
    return { ...rest, path: query ? `${e.path}?${query}` : e.path } as E;
  }
  return event;
}

/** API Gateway's request id for this event (the id in its access log), if any. */
export function apiGatewayRequestId(event: unknown): string | undefined {
  const id = (event as HttpApiV2Event | undefined)?.requestContext?.requestId;
  return typeof id === 'string' && id.length > 0 && id.length <= 128 ? id : undefined;
}
