// A real SMTP server (smtp-server) for the mail tests and the bench: it records every message it
// accepts, and can be told to refuse (a 4xx or 5xx at RCPT TO), to be slow, or to require AUTH.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The message as it arrived (after the server undid dot-stuffing). */
  raw: string;
  from: string;
  to: string[];
  /** Date.now() when the server accepted it. */
  acceptedAt: number;
}

export interface SmtpSink {
  port: number;
  /** smtp://[user:pass@]127.0.0.1:port */
  url(credentials?: { user: string; pass: string }): string;
  received: ReceivedMail[];
  /** Refuse RCPT TO with this reply (e.g. 451 or 550) while set. */
  refuse?: { code: number; message: string };
  /** Refuse RCPT TO for these addresses only (lower-case), with their reply. */
  refuseAddress: Map<string, { code: number; message: string }>;
  /** Every RCPT TO address offered, accepted or not, in order. */
  offered: string[];
  /** Hold each DATA this long before answering 250. */
  delayMs: number;
  close(): Promise<void>;
}

export async function startSmtpSink(options: { auth?: { user: string; pass: string }; echoAuth?: boolean } = {}) {
  const sink = {
    received: [] as ReceivedMail[],
    delayMs: 0,
    refuseAddress: new Map(),
    offered: [],
  } as unknown as SmtpSink;
  const server = new SMTPServer({
    // Plain SMTP on loopback: no STARTTLS offered (a test certificate would be refused by a client
    // that verifies, as ours does).
    disabledCommands: options.auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: !options.auth,
    allowInsecureAuth: true,
    logger: false,
    size: 10 * 1024 * 1024,
    onAuth(auth, _session, callback) {
      if (auth.username === options.auth?.user && auth.password === options.auth?.pass) {
        callback(null, { user: auth.username });
        return;
      }
      // A hostile or careless server repeating the credentials it was given, in several forms.
      const said = options.echoAuth
        ? ` (you sent ${auth.username}:${auth.password}, ${Buffer.from(`\0${auth.username}\0${auth.password}`).toString('base64')}, ${encodeURIComponent(auth.password ?? '')})`
        : '';
      const err = Object.assign(new Error(`Invalid username or password${said}`), { responseCode: 535 });
      callback(err);
    },
    onRcptTo(address, _session, callback) {
      sink.offered.push(address.address);
      const refusal = sink.refuse ?? sink.refuseAddress.get(address.address.toLowerCase());
      if (refusal) {
        callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const finish = () => {
          sink.received.push({
            raw: Buffer.concat(chunks).toString('utf8'),
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            acceptedAt: Date.now(),
          });
          callback();
        };
        if (sink.delayMs) setTimeout(finish, sink.delayMs);
        else finish();
      });
    },
  });
  // A client that dies mid-session (the crash tests kill the sender) resets its connection: expected.
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.port = (server.server.address() as AddressInfo).port;
  sink.url = (credentials) =>
    credentials
      ? `smtp://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.pass)}@127.0.0.1:${sink.port}`
      : `smtp://127.0.0.1:${sink.port}`;
  sink.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return sink;
}
