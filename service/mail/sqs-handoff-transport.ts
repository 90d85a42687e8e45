// Deployed, the outbox is drained inside the VPC (the database is only there) and SES is called
// from outside it (no NAT gateway, and SES's VPC endpoint speaks SMTP only, with long-lived SMTP
// credentials): the relay hands each rendered message to an SQS queue through the VPC's SQS
// endpoint, and the sender function (service/aws/mail-sender-handler.ts) sends it with SES. A
// message counts as sent once SQS has it durably, as an SMTP relay's 250 would; SQS redelivers
// it to the sender until SES takes it, then to a dead-letter queue with an alarm.
// SQS's JSON protocol, signed with our own SigV4 (service/aws/sigv4.ts): no SDK in the relay.
import http from 'node:http';
import https from 'node:https';
import { type AwsCredentials, signRequest } from '../aws/sigv4';
import { type MailTransport, TransportError } from './transport';

export interface SqsHandOffOptions {
  queueUrl: string;
  region: string;
  credentials: AwsCredentials;
  /** Default: the regional endpoint (reached through the VPC's interface endpoint by private DNS). */
  endpoint?: string;
  timeoutMs?: number;
}

/** The message on the queue: what the sender needs to call SES. */
export interface HandOffBody {
  messageId: string;
  from: string;
  to: string;
  raw: string;
}

const agent = new https.Agent({ keepAlive: true, maxSockets: 8 });

function post(url: URL, headers: Record<string, string>, body: string, timeoutMs: number) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const transport = url.protocol === 'http:' ? http : https;
    const req = transport.request(
      url,
      { method: 'POST', headers, agent: url.protocol === 'http:' ? undefined : agent, timeout: timeoutMs },
      (res: http.IncomingMessage) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A back-channel logout token on the same queue: the sender function POSTs `body` to `uri`
 * (service/aws/mail-sender-handler.ts), from outside the VPC, as it sends mail with SES.
 */
export interface LogoutHandOffBody {
  kind: 'backchannel_logout';
  uri: string;
  body: string;
}

/** Deployed, the relay's way out for logout tokens: queued answers 202 (accepted, not yet delivered). */
export function sqsLogoutHandOff(options: SqsHandOffOptions) {
  const send = queueSender(options);
  return async (request: { uri: string; body: string }): Promise<{ status: number } | { error: string }> => {
    const payload: LogoutHandOffBody = { kind: 'backchannel_logout', uri: request.uri, body: request.body };
    try {
      await send(JSON.stringify(payload));
      return { status: 202 };
    } catch (err) {
      return { error: (err as Error).message };
    }
  };
}

export function sqsHandOffTransport(options: SqsHandOffOptions): MailTransport {
  const send = queueSender(options);
  return {
    description: `ses via SQS ${options.queueUrl.replace(/^https?:\/\/[^/]+/, '')}`,
    async send(message) {
      const payload: HandOffBody = {
        messageId: message.messageId,
        from: message.from,
        to: message.to,
        raw: message.raw,
      };
      return `queued for Amazon SES (SQS message ${await send(JSON.stringify(payload))})`;
    },
    async close() {},
  };
}

/** SendMessage of one body to the hand-off queue: its SQS MessageId, or a (temporary) TransportError. */
function queueSender(options: SqsHandOffOptions) {
  const url = new URL(options.endpoint ?? `https://sqs.${options.region}.amazonaws.com/`);
  return async (messageBody: string): Promise<string> => {
    const body = JSON.stringify({ QueueUrl: options.queueUrl, MessageBody: messageBody });
    const headers = signRequest({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessage' },
      body,
      region: options.region,
      service: 'sqs',
      credentials: options.credentials,
    });
    let answer: { status: number; text: string };
    try {
      answer = await post(url, headers, body, options.timeoutMs ?? 10_000);
    } catch (err) {
      throw new TransportError(`SQS SendMessage: ${(err as Error).message}`, false);
    }
    let parsed: { MessageId?: string; __type?: string; message?: string } = {};
    try {
      parsed = JSON.parse(answer.text || '{}');
    } catch {
      // an HTML error page: the status says enough
    }
    if (answer.status !== 200 || !parsed.MessageId) {
      const type = String(parsed.__type ?? `HTTP ${answer.status}`)
        .split('#')
        .pop();
      throw new TransportError(`SQS SendMessage: ${type}: ${parsed.message ?? answer.status}`, false);
    }
    return parsed.MessageId;
  };
}
