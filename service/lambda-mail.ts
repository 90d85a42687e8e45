// The mail sender function's entry (bundle `mail`, deployed outside the VPC): SES with the
// function's role, through the configuration set the stack names (MAIL_SES_CONFIGURATION_SET).
import { createMailSenderHandler } from './aws/mail-sender-handler';
import { loadConfig } from './config';
import { createSendRateLimiter } from './mail/send-rate';
import { sesTransport } from './mail/ses-transport';

const config = loadConfig(process.env);
const transport =
  config.mail.transport.kind === 'ses'
    ? sesTransport({ configurationSet: config.mail.transport.configurationSet })
    : undefined;
if (!transport) throw new Error('the mail sender function needs MAIL_URL=ses');

export const handler = createMailSenderHandler({
  transport,
  limiter: createSendRateLimiter(config.mail.sendRate),
  log: (level, entry) => {
    if (config.logLevel !== 'silent') console.log(JSON.stringify({ level, ...entry }));
  },
});
