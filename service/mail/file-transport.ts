// The default transport (MAIL_URL unset): each message an RFC 5322 .eml file under
// LANYARD_HOME/outbox/, which any mail client opens. Written atomically (a temporary file, then
// rename), named by queue time and Message-ID so a retry rewrites the same file. The directory is
// private (0700; files 0600): these messages hold password-reset links.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type MailTransport, type OutgoingMessage, TransportError } from './transport';

/** `20261126T194512Z-<the Message-ID's left part>.eml` */
export function emlFileName(message: Pick<OutgoingMessage, 'messageId' | 'queuedAt'>): string {
  const stamp = message.queuedAt
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const local = message.messageId
    .replace(/^<|>$/g, '')
    .split('@')[0]
    .replace(/[^A-Za-z0-9-]/g, '_');
  return `${stamp}-${local}.eml`;
}

export function fileTransport(directory: string): MailTransport {
  let ready: Promise<unknown> | undefined;
  return {
    description: `file ${directory}`,
    async send(message) {
      ready ??= mkdir(directory, { recursive: true, mode: 0o700 });
      const file = path.join(directory, emlFileName(message));
      const tmp = path.join(directory, `.${randomBytes(8).toString('hex')}.tmp`);
      try {
        await ready;
        await writeFile(tmp, message.raw.replace(/\r?\n/g, '\r\n'), { mode: 0o600, flag: 'wx' });
        await rename(tmp, file);
      } catch (err) {
        ready = undefined;
        await unlink(tmp).catch(() => undefined);
        throw new TransportError(`could not write ${file}: ${(err as Error).message}`, false);
      }
      return `written to ${file}`;
    },
    async close() {},
  };
}
