// service/aws/http-api-event.ts: HTTP API v2 queries reach Fastify raw, as on `npm start`.
import { describe, expect, it } from 'vitest';
import { withRawQueryString } from '../../service/aws/http-api-event';

describe('withRawQueryString', () => {
  it('moves the raw query string onto the path and drops the decoded, comma-joined parameters', () => {
    const event = {
      version: '2.0',
      rawPath: '/oauth/authorize',
      rawQueryString: 'state=a%2Cb&redirect_uri=https%3A%2F%2Fx.example%2Fcb%3Fq%3D100%2525&scope=api+read_user',
      queryStringParameters: { state: 'a,b', redirect_uri: 'https://x.example/cb?q=100%25', scope: 'api read_user' },
      headers: { host: 'h' },
    };
    expect(withRawQueryString(event)).toEqual({
      version: '2.0',
      rawPath:
        '/oauth/authorize?state=a%2Cb&redirect_uri=https%3A%2F%2Fx.example%2Fcb%3Fq%3D100%2525&scope=api+read_user',
      rawQueryString: event.rawQueryString,
      headers: { host: 'h' },
    });
  });

  it('leaves events without a query, and other event kinds, alone', () => {
    expect(withRawQueryString({ version: '2.0', rawPath: '/-/health', rawQueryString: '' })).toEqual({
      version: '2.0',
      rawPath: '/-/health',
      rawQueryString: '',
    });
    expect(withRawQueryString(undefined)).toBeUndefined();
    const alb = { requestContext: { elb: {} }, path: '/x' };
    expect(withRawQueryString(alb)).toBe(alb);
  });

  it('REST API (1.0) events: the decoded multi-value parameters re-encoded onto the path, commas kept', () => {
    const v1 = {
      httpMethod: 'GET',
      path: '/oauth/authorize',
      queryStringParameters: { state: 'a,b', scope: 'read_user' },
      multiValueQueryStringParameters: {
        state: ['a,b'],
        redirect_uri: ['https://x.example/cb?q=100%'],
        scope: ['api read_user', 'read_user'],
      },
      headers: { host: 'h' },
    };
    expect(withRawQueryString(v1)).toEqual({
      httpMethod: 'GET',
      path: '/oauth/authorize?state=a%2Cb&redirect_uri=https%3A%2F%2Fx.example%2Fcb%3Fq%3D100%25&scope=api%20read_user&scope=read_user',
      headers: { host: 'h' },
    });
    expect(withRawQueryString({ httpMethod: 'GET', path: '/x', multiValueQueryStringParameters: null })).toEqual({
      httpMethod: 'GET',
      path: '/x',
    });
  });
});
