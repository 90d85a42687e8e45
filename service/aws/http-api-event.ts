// API Gateway HTTP API (payload 2.0) events → what @fastify/aws-lambda hands to Fastify.
// @fastify/aws-lambda builds the query from `queryStringParameters`, which API Gateway has
// already decoded and comma-joined for repeated keys, and by default splits every value that
// contains a comma into an array: `state=a,b` or a redirect_uri with a comma would arrive as
// arrays, and a value holding a literal %xx would be decoded twice. Handing Fastify the raw
// query string instead gives exactly the parsing of `npm start`.

export interface HttpApiV2Event {
  version?: string;
  rawPath?: string;
  rawQueryString?: string;
  queryStringParameters?: Record<string, string>;
  [key: string]: unknown;
}

export function withRawQueryString<E>(event: E): E {
  const e = event as HttpApiV2Event;
  if (e?.version !== '2.0' || typeof e.rawPath !== 'string') return event;
  const { queryStringParameters: _decoded, ...rest } = e;
  return { ...rest, rawPath: e.rawQueryString ? `${e.rawPath}?${e.rawQueryString}` : e.rawPath } as E;
}
