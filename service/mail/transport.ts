// What the sender hands a rendered message to. A transport answers with what the next hop said
// ("250 2.0.0 Ok: queued as …", the SES MessageId, the file written) or throws a TransportError,
// whose message never holds a credential (see redact.ts).

export interface OutgoingMessage {
  /** The RFC 5322 message, headers and body, as rendered once (domain/mail/render.ts). */
  raw: string;
  /** The envelope: MAIL FROM and the one RCPT TO. */
  from: string;
  to: string;
  messageId: string;
  /** When it was queued: names the .eml file. */
  queuedAt: Date;
}

export interface MailTransport {
  /** For logs and `mail test`: "smtp://mail.example.org:587", "ses", "file /path"; never a credential. */
  readonly description: string;
  /** Hand over one message; resolves with the next hop's answer. */
  send(message: OutgoingMessage): Promise<string>;
  close(): Promise<void>;
}

/**
 * A failed hand-over. `permanent`: trying again cannot help. `hardBounce`: the recipient itself was
 * refused for good (SMTP 5xx at RCPT TO), so the address is suppressed; `source` names who said so.
 */
export class TransportError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly hardBounce = false,
    readonly source?: string,
  ) {
    super(message);
    this.name = 'TransportError';
  }
}
