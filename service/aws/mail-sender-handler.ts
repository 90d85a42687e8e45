// The mail sender function (deployed outside the VPC; bundled as `mail`): consumes the hand-off
// queue the relay fills (service/mail/sqs-handoff-transport.ts) and sends each message's raw
// bytes with Amazon SES. A temporary failure is reported as a batch item failure, so SQS offers
// that message again after its visibility timeout (the rest of the batch is done); a permanent
// one (SES refused the message itself) is logged and dropped, since redelivery cannot help.
// It has no database and no secret: its role may only consume the queue and send as the identity.
import { postLogoutToken, retryableStatus } from '../mail/logout-post';
import type { SendRateLimiter } from '../mail/send-rate';
import type { HandOffBody, LogoutHandOffBody } from '../mail/sqs-handoff-transport';
import { type MailTransport, TransportError } from '../mail/transport';

export interface SqsRecord {
  messageId: string;
  body: string;
}

export interface SqsEvent {
  Records: SqsRecord[];
}

export interface BatchResponse {
  batchItemFailures: { itemIdentifier: string }[];
}

export type Log = (level: 'info' | 'warn' | 'error', entry: Record<string, unknown>) => void;

function parseBody(body: string): HandOffBody | LogoutHandOffBody | undefined {
  try {
    const m = JSON.parse(body) as Partial<HandOffBody> & Partial<LogoutHandOffBody>;
    if (m.kind === 'backchannel_logout')
      return typeof m.uri === 'string' && typeof m.body === 'string' ? (m as LogoutHandOffBody) : undefined;
    const ok = ['messageId', 'from', 'to', 'raw'].every((k) => typeof m[k as keyof HandOffBody] === 'string');
    return ok ? (m as HandOffBody) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `limiter`: this instance's share of MAIL_SEND_RATE (the stack divides the SES account's rate by
 * the queue's maximum concurrency), kept across invocations of the instance.
 */
export function createMailSenderHandler(options: { transport: MailTransport; log: Log; limiter?: SendRateLimiter }) {
  return async (event: SqsEvent): Promise<BatchResponse> => {
    const failures: { itemIdentifier: string }[] = [];
    await Promise.all(
      (event.Records ?? []).map(async (record) => {
        const body = parseBody(record.body);
        if (!body) {
          options.log('error', { msg: 'mail sender: not a hand-off message, dropped', sqsMessageId: record.messageId });
          return;
        }
        if ('kind' in body) {
          // A back-channel logout token: POSTed from here, outside the VPC. A retryable answer
          // (timeout, redirect, 408, 429, 5xx) goes back to SQS; after its receives, the DLQ.
          const answer = await postLogoutToken(body.uri, body.body);
          const status = 'status' in answer ? answer.status : undefined;
          const detail = status === undefined ? (answer as { error: string }).error : `HTTP ${status}`;
          const host = new URL(body.uri).host;
          if (status !== undefined && status >= 200 && status < 300) {
            options.log('info', { msg: 'back-channel logout: sent', host, detail });
          } else if (status === undefined || retryableStatus(status)) {
            options.log('warn', { msg: 'back-channel logout: failed, SQS will offer it again', host, detail });
            failures.push({ itemIdentifier: record.messageId });
          } else {
            options.log('error', { msg: 'back-channel logout: refused, dropped', host, detail });
          }
          return;
        }
        try {
          await options.limiter?.take();
          const answer = await options.transport.send({ ...body, queuedAt: new Date() });
          options.log('info', { msg: 'mail: sent', messageId: body.messageId, detail: answer });
        } catch (err) {
          const permanent = err instanceof TransportError && err.permanent;
          options.log(permanent ? 'error' : 'warn', {
            msg: permanent ? 'mail: refused, dropped' : 'mail: failed, SQS will offer it again',
            messageId: body.messageId,
            detail: (err as Error).message,
          });
          if (!permanent) failures.push({ itemIdentifier: record.messageId });
        }
      }),
    );
    return { batchItemFailures: failures };
  };
}
