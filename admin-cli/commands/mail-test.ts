// `mail test --to ADDRESS`: queue one message and send it at once through the configured transport
// (MAIL_URL), then say what the transport answered. The message stays in the outbox like any other.
import { buildMessage } from '../../service/domain/mail/message';
import { enqueueMail } from '../../service/domain/mail/outbox';
import { getMail } from '../../service/domain/mail/operations';
import { drainOnce } from '../../service/mail/sender';
import { defineCommand } from '../command';
import { UserError } from '../errors';
import { recordOf } from '../output';
import { mailView } from '../views';

export default defineCommand<{ to: string }>({
  path: ['mail', 'test'],
  describe: 'Send a test message through the configured transport and report the answer',
  examples: [['mail test --to you@example.com', 'one message now; prints what the SMTP server or SES said']],
  options: (y) => y.option('to', { type: 'string', demandOption: true, describe: 'The recipient' }),
  // The message must be committed before the sender claims it.
  transaction: false,
  async run(args, { db, progress, services }) {
    const mail = services.mail();
    const message = buildMessage(
      { publicUrl: mail.publicUrl, from: mail.config.from },
      {
        name: '',
        subject: 'Lanyard test message',
        paragraphs: [
          'This message was sent by `lanyard-admin mail test` to check that Lanyard can send e-mail.',
          'No action is needed.',
        ],
      },
    );
    const { id } = await enqueueMail(db, { ...message, to: String(args.to), kind: 'test' });
    const transport = mail.transport();
    progress(`Queued mail ${id}; sending through ${transport.description} …`);
    try {
      await drainOnce(
        // One attempt: a refused test message is left failed, not retried behind the operator's back.
        { db, transport, from: mail.config.from, maxAttempts: 1, concurrency: 1 },
        [Number(id)],
      );
    } finally {
      await transport.close();
    }
    const sent = await getMail(db, Number(id));
    const view = mailView(sent);
    if (sent.status !== 'sent') {
      throw new UserError(
        `the transport refused mail ${id}: ${sent.last_error} (left failed; \`mail retry ${id}\` sends it again)`,
      );
    }
    return { json: view, text: `Sent through ${transport.description}: ${sent.transport_response}\n${recordOf(view)}` };
  },
});
