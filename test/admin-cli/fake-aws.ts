// The AWS SDK stubbed at its API boundary: a request handler that receives the signed HTTP
// requests the real LambdaClient/STSClient build, and answers them as AWS would. Invocations of
// the admin function run the real handler (admin-cli/function) in-process against the test database.
import type { AdminInvocation } from '../../admin-cli/function/protocol';

export interface SentRequest {
  method: string;
  hostname: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

export const CALLER_ARN = 'arn:aws:iam::123456789012:user/operator';
export const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

type Reply = { statusCode: number; headers: Record<string, string>; body: Uint8Array };
const reply = (statusCode: number, body: string, headers: Record<string, string> = {}): Reply => ({
  statusCode,
  headers: { 'content-type': 'application/json', ...headers },
  body: new TextEncoder().encode(body),
});

export function fakeAws(admin: (event: AdminInvocation, context: { awsRequestId: string }) => Promise<unknown>) {
  const requests: SentRequest[] = [];
  const payloads: AdminInvocation[] = [];
  let counter = 0;
  const requestHandler = {
    async handle(request: any) {
      const body =
        typeof request.body === 'string' ? request.body : new TextDecoder().decode(request.body ?? new Uint8Array());
      requests.push({
        method: request.method,
        hostname: request.hostname,
        path: request.path,
        headers: { ...request.headers },
        body,
      });
      if (request.hostname.startsWith('sts.')) {
        const xml =
          '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>' +
          `<Arn>${CALLER_ARN}</Arn><UserId>AIDAEXAMPLE</UserId><Account>123456789012</Account>` +
          '</GetCallerIdentityResult><ResponseMetadata><RequestId>sts-1</RequestId></ResponseMetadata></GetCallerIdentityResponse>';
        return { response: { ...reply(200, xml), headers: { 'content-type': 'text/xml' } } };
      }
      const m = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(request.path);
      if (!m)
        return {
          response: reply(400, '{"message":"unexpected request"}', {
            'x-amzn-errortype': 'InvalidRequestContentException',
          }),
        };
      const fn = decodeURIComponent(m[1]);
      if (fn.endsWith('missing')) {
        return {
          response: reply(404, `{"Type":"User","Message":"Function not found: ${fn}"}`, {
            'x-amzn-errortype': 'ResourceNotFoundException',
          }),
        };
      }
      if (fn.endsWith('denied')) {
        return {
          response: reply(
            403,
            `{"Message":"User: ${CALLER_ARN} is not authorized to perform: lambda:InvokeFunction on resource: ${fn}"}`,
            {
              'x-amzn-errortype': 'AccessDeniedException',
            },
          ),
        };
      }
      if (fn.endsWith('broken')) {
        return {
          response: reply(
            200,
            '{"errorType":"Runtime.ImportModuleError","errorMessage":"Cannot find module \'index\'"}',
            { 'x-amz-function-error': 'Unhandled' },
          ),
        };
      }
      const payload = JSON.parse(body) as AdminInvocation;
      payloads.push(payload);
      const result = await admin(payload, { awsRequestId: `req-${++counter}` });
      return { response: reply(200, JSON.stringify(result), { 'x-amz-executed-version': '$LATEST' }) };
    },
  };
  return { requestHandler, requests, payloads, clientConfig: { requestHandler, credentials, region: 'eu-west-1' } };
}
