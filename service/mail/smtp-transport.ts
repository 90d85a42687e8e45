// MAIL_URL=smtp://… / smtps://…: nodemailer's SMTP client, pooled (one connection per MAIL_CONCURRENCY
// slot, reused across messages). nodemailer because it is the maintained, dependency-free SMTP
// client of Node (STARTTLS, implicit TLS, AUTH PLAIN/LOGIN, pooling, raw messages with an explicit
// envelope) and answers with the server's reply text and code, which the outbox keeps.
// STARTTLS is used whenever the server offers it, with the certificate verified; smtps:// is TLS
// from the first byte. The password is read from the URL here and nowhere else, and every error is
// redacted (redact.ts) before it leaves this module.
//
// A rendered message goes to nodemailer's SMTP pool directly (the transport under its `sendMail`),
// described by a small object that hands the pool the envelope, the Message-ID and the bytes:
// `sendMail` would first build a MIME tree around the raw message, parse and normalise both
// addresses and stream the bytes through a pipeline of three streams, per message, work the
// outbox has already done (bench/mail.ts: about a fifth of a send's CPU). Only plain addresses
// take this path, those nodemailer's normalisation leaves as they are (an ASCII dot-atom at a
// lower-case host name); any other goes through `sendMail` over the same pool and connections.
import { Readable } from 'node:stream';
import nodemailer from 'nodemailer';
import SMTPPool from 'nodemailer/lib/smtp-pool';
import { redact, secretForms } from './redact';
import { type MailTransport, type OutgoingMessage, TransportError } from './transport';

export interface SmtpTransportOptions {
  url: string;
  /** Connections kept open at once (the sender's concurrency). */
  maxConnections: number;
  /** Socket timeouts in ms (connect, greeting, idle): a hung server fails the attempt, not the sender. */
  timeoutMs?: number;
}

interface SmtpError extends Error {
  code?: string;
  responseCode?: number;
  command?: string;
  response?: string;
}

export function smtpTransport(options: SmtpTransportOptions): MailTransport {
  const url = new URL(options.url);
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  const secure = url.protocol === 'smtps:';
  const port = Number(url.port || (secure ? 465 : 587));
  const forms = [...secretForms(user, pass), ...(url.password ? [url.password] : [])];
  const timeout = options.timeoutMs ?? 30_000;
  const pool = new SMTPPool({
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    secure,
    auth: user ? { user, pass } : undefined,
    pool: true,
    maxConnections: options.maxConnections,
    maxMessages: 1000,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    logger: false,
    debug: false,
  });
  const transporter = nodemailer.createTransport(pool);
  const description = `${url.protocol}//${url.host}`;
  return {
    description,
    async send(message) {
      try {
        const info =
          PLAIN_ADDRESS.test(message.from) && PLAIN_ADDRESS.test(message.to)
            ? await sendRendered(pool, message)
            : await transporter.sendMail({ envelope: { from: message.from, to: [message.to] }, raw: message.raw });
        return redact(String(info.response ?? 'accepted'), forms);
      } catch (err) {
        const e = err as SmtpError;
        const what = [e.code, e.command && `at ${e.command}`].filter(Boolean).join(' ');
        const text = redact(`${description}: ${what ? `${what}: ` : ''}${e.message}`, forms);
        // 5xx to RCPT TO or DATA: this server will never take this message (RFC 5321 §4.2.1).
        // A 5xx to AUTH or MAIL FROM is about our configuration: retried, so fixing it loses nothing.
        const permanent = (e.responseCode ?? 0) >= 500 && (e.command === 'RCPT TO' || e.command === 'DATA');
        // Only a 5xx to RCPT TO is about the address (550 no such mailbox, 551, 553): a hard bounce.
        // A 5xx to DATA refuses this message (its content), not the mailbox.
        const hardBounce = permanent && e.command === 'RCPT TO';
        throw new TransportError(text, permanent, hardBounce, 'smtp');
      }
    },
    async close() {
      transporter.close();
    },
  };
}

/**
 * An address nodemailer's envelope normalisation returns unchanged: a dot-atom local part and a
 * host name in lower case (it maps a domain through `domainToASCII`, which lower-cases it).
 */
const PLAIN_ADDRESS =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;

/**
 * One rendered message handed to the pool as the message object its connections read: the
 * envelope, the Message-ID (logs) and a fresh stream of the bytes on each read (the pool sends a
 * message again over another connection when the first closed before reading it).
 */
function sendRendered(pool: SMTPPool, message: OutgoingMessage): Promise<SMTPPool.SentMessageInfo> {
  const mail = {
    data: {},
    message: {
      getEnvelope: () => ({ from: message.from, to: [message.to] }),
      messageId: () => message.messageId,
      getHeader: (name: string) => (name.toLowerCase() === 'message-id' ? message.messageId : undefined),
      createReadStream: () => {
        const stream = new Readable({ read() {} });
        stream.push(message.raw);
        stream.push(null);
        return stream;
      },
    },
  };
  return new Promise((resolve, reject) => {
    pool.send(mail as never, (err, info) => (err || !info ? reject(err) : resolve(info)));
  });
}
