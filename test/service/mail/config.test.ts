// MAIL_URL and MAIL_FROM: parsed at start-up; a bad value is refused with a message that never
// repeats the URL (it may hold the SMTP password).
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../service/config';

const mail = (env: Record<string, string>) => loadConfig({ LANYARD_HOME: '/srv/lanyard', ...env }).mail;

describe('mail configuration', () => {
  it('defaults: .eml files under LANYARD_HOME/outbox, From noreply@ the PUBLIC_URL host', () => {
    expect(mail({ PUBLIC_URL: 'https://id.example.org/base' })).toEqual({
      transport: { kind: 'file', directory: '/srv/lanyard/outbox' },
      from: 'Lanyard <noreply@id.example.org>',
      maxAttempts: 10,
      concurrency: 4,
      retentionDays: 30,
      leaseSeconds: 300,
      sendRate: 0,
    });
  });

  it('MAIL_SEND_RATE: messages a second, decimals allowed; anything else is refused', () => {
    expect(mail({ MAIL_SEND_RATE: '14' }).sendRate).toBe(14);
    expect(mail({ MAIL_SEND_RATE: '0.5' }).sendRate).toBe(0.5);
    for (const bad of ['-1', 'fast', '10001', '1e3', '1.2345']) {
      expect(() => mail({ MAIL_SEND_RATE: bad })).toThrow(
        new ConfigError(
          `MAIL_SEND_RATE must be a number of messages a second from 0 (no limit) to 10000 (got "${bad}")`,
        ),
      );
    }
  });

  it('smtp:// and smtps:// URLs, with their default ports', () => {
    expect(mail({ MAIL_URL: 'smtp://mail.example.org' }).transport).toEqual({
      kind: 'smtp',
      url: 'smtp://mail.example.org',
      secure: false,
      host: 'mail.example.org',
      port: 587,
    });
    expect(mail({ MAIL_URL: 'smtps://u:p%40ss@mail.example.org:2465' }).transport).toEqual({
      kind: 'smtp',
      url: 'smtps://u:p%40ss@mail.example.org:2465',
      secure: true,
      host: 'mail.example.org',
      port: 2465,
    });
  });

  it('ses, with an optional configuration set', () => {
    expect(mail({ MAIL_URL: 'ses' }).transport).toEqual({ kind: 'ses', configurationSet: undefined });
    expect(mail({ MAIL_URL: 'ses', MAIL_SES_CONFIGURATION_SET: 'lanyard-prod' }).transport).toEqual({
      kind: 'ses',
      configurationSet: 'lanyard-prod',
    });
  });

  it.each([
    [
      'http://user:hunter2secret@mail.example.org',
      'MAIL_URL must be smtp://[user:password@]host[:port], smtps://…, or ses (got the scheme "http:")',
    ],
    [
      'smtp://user:hunter2secret@mail.example.org/x',
      'MAIL_URL must be smtp://[user:password@]host[:port], smtps://…, or ses (a path is not allowed)',
    ],
    [
      'smtp://user:hunter2secret@mail.example.org?tls=off',
      'MAIL_URL must be smtp://[user:password@]host[:port], smtps://…, or ses (query parameters are not allowed)',
    ],
    [
      'smtp://:hunter2secret@mail.example.org',
      'MAIL_URL must be smtp://[user:password@]host[:port], smtps://…, or ses (a password needs a user name)',
    ],
    [
      'smtp://user:hunter2secret%zz@mail.example.org',
      'MAIL_URL must be smtp://[user:password@]host[:port], smtps://…, or ses (the user name or password is not valid percent-encoding)',
    ],
    ['hunter2secret', 'MAIL_URL must be smtp://[user:password@]host[:port], smtps://…, or ses (it is not a URL)'],
    [
      'smtp://user:hunter2secret@mail.example.org:99999',
      'MAIL_URL must be smtp://[user:password@]host[:port], smtps://…, or ses (it is not a URL)',
    ],
  ])('refuses MAIL_URL %s without repeating it', (url, message) => {
    const err = (() => {
      try {
        mail({ MAIL_URL: url });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.message).toBe(message);
    expect(err?.message).not.toContain('hunter2');
  });

  it('MAIL_FROM: a bare address or a display name with an address', () => {
    expect(mail({ MAIL_FROM: 'id@example.org' }).from).toBe('id@example.org');
    expect(mail({ MAIL_FROM: 'Example ID <id@example.org>' }).from).toBe('Example ID <id@example.org>');
  });

  it.each(['nobody', 'A <b@c.d>, E <e@f.g>', 'Lanyard <noreply@example.org', 'x@example.org\r\nBcc: e@evil.example'])(
    'refuses MAIL_FROM %j',
    (from) => {
      expect(() => mail({ MAIL_FROM: from })).toThrow(
        new ConfigError(`MAIL_FROM must be an address, e.g. "Lanyard <noreply@example.com>" (got "${from}")`),
      );
    },
  );

  it.each([
    ['MAIL_MAX_ATTEMPTS', '0', 'MAIL_MAX_ATTEMPTS must be a whole number from 1 to 100 (got "0")'],
    ['MAIL_CONCURRENCY', '65', 'MAIL_CONCURRENCY must be a whole number from 1 to 64 (got "65")'],
    ['MAIL_LEASE_SECONDS', '4', 'MAIL_LEASE_SECONDS must be a whole number from 5 to 3600 (got "4")'],
    ['MAIL_RETENTION_DAYS', '1.5', 'MAIL_RETENTION_DAYS must be a whole number from 1 to 3650 (got "1.5")'],
  ])('refuses %s=%s', (name, value, message) => {
    expect(() => mail({ [name]: value })).toThrow(new ConfigError(message));
  });
});
