// MAIL_URL=ses: Amazon SES v2 SendEmail with the raw message (our MIME, Message-ID and headers kept
// as rendered), through the configuration set when one is named. Credentials are the SDK's default
// chain (the function's role when deployed); none is ever read or logged here. The SDK is loaded on
// first use, so `npm start` with SMTP or files never loads it.
import { type MailTransport, TransportError } from './transport';

export interface SesTransportOptions {
  region?: string;
  configurationSet?: string;
  /** Only to point at a local stand-in in tests; default: the regional endpoint. */
  endpoint?: string;
}

/** SES errors that no retry can fix for this message. Everything else (throttling, 5xx, network) is retried. */
const PERMANENT = new Set(['MessageRejected', 'BadRequestException']);

export function sesTransport(options: SesTransportOptions = {}): MailTransport {
  let client: Promise<{ send(raw: Uint8Array, from: string, to: string): Promise<string | undefined> }> | undefined;
  const load = async () => {
    const { SESv2Client, SendEmailCommand } = await import('@aws-sdk/client-sesv2');
    const ses = new SESv2Client({
      region: options.region,
      endpoint: options.endpoint,
      maxAttempts: 1, // the outbox retries, with its own backoff and attempt count
    });
    return {
      async send(raw: Uint8Array, from: string, to: string) {
        const out = await ses.send(
          new SendEmailCommand({
            FromEmailAddress: from,
            Destination: { ToAddresses: [to] },
            Content: { Raw: { Data: raw } },
            ConfigurationSetName: options.configurationSet,
          }),
        );
        return out.MessageId;
      },
    };
  };
  return {
    description: options.configurationSet ? `ses (configuration set ${options.configurationSet})` : 'ses',
    async send(message) {
      client ??= load();
      try {
        const id = await (await client).send(Buffer.from(message.raw, 'utf8'), message.from, message.to);
        return `accepted by Amazon SES as ${id}`;
      } catch (err) {
        const e = err as Error & { $metadata?: { httpStatusCode?: number } };
        const status = e.$metadata?.httpStatusCode;
        throw new TransportError(
          `Amazon SES: ${e.name}${status ? ` (HTTP ${status})` : ''}: ${e.message}`,
          PERMANENT.has(e.name),
        );
      }
    },
    async close() {},
  };
}
