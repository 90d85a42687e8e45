// `mail show ID`: one message as it was sent (the RFC 5322 text the transport got), with its state.
import { getMail } from '../../service/domain/mail/operations';
import { renderMail } from '../../service/domain/mail/render';
import { defineCommand } from '../command';
import { recordOf } from '../output';
import { mailId, mailView } from '../views';

export default defineCommand<{ id: string }>({
  path: ['mail', 'show <id>'],
  describe: 'Show one message as it was sent',
  examples: [
    ['mail show 42', 'the state of message 42, then the message itself'],
    ['mail show 42 --json', 'as JSON, the raw message in "raw"'],
  ],
  options: (y) => y.positional('id', { type: 'string', describe: 'The message id (from `mail list`)' }),
  async run(args, { db, services }) {
    const mail = await getMail(db, mailId(args.id));
    // Rendering is deterministic: the bytes the sender sent, or will send (its Date is the queue
    // time already). A row stored rendered by an earlier version shows what it stored.
    const raw = mail.raw ?? (await renderMail(mail, services.mail().config.from));
    const note = mail.attempts ? '' : '(not sent yet: shown as it will be sent)\n';
    return {
      json: { ...mailView(mail), from: mail.from_address, headers: mail.headers, raw },
      text: `${recordOf(mailView(mail))}\n\n${note}${raw.replace(/\r\n/g, '\n').trimEnd()}`,
    };
  },
});
