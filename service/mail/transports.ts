// MAIL_URL → a transport (config.ts has parsed and checked it).
import type { MailConfig } from '../config';
import type { AwsCredentials } from '../aws/sigv4';
import { fileTransport } from './file-transport';
import { sesTransport } from './ses-transport';
import { smtpTransport } from './smtp-transport';
import { sqsHandOffTransport } from './sqs-handoff-transport';
import type { MailTransport } from './transport';

export interface TransportContext {
  /** Deployed relay only: the function's region and role credentials for the SQS hand-off. */
  aws?: { region: string; credentials: AwsCredentials };
}

export function createMailTransport(mail: MailConfig, context: TransportContext = {}): MailTransport {
  const t = mail.transport;
  switch (t.kind) {
    case 'file':
      return fileTransport(t.directory);
    case 'smtp':
      return smtpTransport({ url: t.url, maxConnections: mail.concurrency });
    case 'ses':
      if (t.handOffQueueUrl) {
        if (!context.aws) throw new Error('MAIL_HANDOFF_QUEUE_URL needs the AWS region and credentials');
        return sqsHandOffTransport({ queueUrl: t.handOffQueueUrl, ...context.aws });
      }
      return sesTransport({ configurationSet: t.configurationSet });
  }
}
