// The mail events function on real PostgreSQL, fed the notifications SES publishes through SNS as
// AWS documents them (fixtures/: the Bounce and Complaint event records of "Examples of event data
// that Amazon SES publishes to Amazon SNS", and an identity feedback notification from the SES
// simulator), wrapped in the SNS event Lambda receives ("Using Lambda with Amazon SNS").
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMailEventsHandler, type SnsEvent } from '../../service/aws/mail-events-handler';
import type { Db } from '../../service/db/schema';
import { listSuppressions } from '../../service/domain/mail/suppressions';
import { createTestDatabase, resetDatabase } from '../support/db';

const fixture = (name: string) => readFileSync(path.join(__dirname, 'fixtures', name), 'utf8');

/** One SNS record per message, as Lambda receives them from a topic subscription. */
const snsEvent = (...messages: string[]): SnsEvent =>
  ({
    Records: messages.map((Message, i) => ({
      EventSource: 'aws:sns',
      EventVersion: '1.0',
      EventSubscriptionArn:
        'arn:aws:sns:eu-west-1:123456789012:lanyard-mail-events:2bcfbf39-05c3-41de-beaa-fcfcc21c8f55',
      Sns: {
        Type: 'Notification',
        MessageId: `95df01b4-ee98-5cb9-9903-4c221d41eb5${i}`,
        TopicArn: 'arn:aws:sns:eu-west-1:123456789012:lanyard-mail-events',
        Subject: null,
        Message,
        Timestamp: '2026-11-26T10:00:00.000Z',
        SignatureVersion: '1',
        Signature: 'EXAMPLE',
        SigningCertUrl: 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-EXAMPLE.pem',
        UnsubscribeUrl: 'https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=EXAMPLE',
        MessageAttributes: {},
      },
    })),
  }) as SnsEvent;

let db: Db;
let logs: Array<Record<string, unknown>>;
let handler: ReturnType<typeof createMailEventsHandler>;
beforeAll(async () => {
  ({ db } = await createTestDatabase());
});
beforeEach(async () => {
  await resetDatabase(db);
  logs = [];
  handler = createMailEventsHandler({ db, log: (level, entry) => logs.push({ level, ...entry }) });
});

describe('SES bounce and complaint events from SNS', () => {
  it('a permanent bounce (event publishing) suppresses the recipient; the log line names no address', async () => {
    expect(await handler(snsEvent(fixture('ses-bounce-event.json')))).toEqual({ suppressed: 1, known: 0, ignored: 0 });
    expect(await listSuppressions(db)).toEqual([
      {
        address: 'recipient@example.com',
        reason: 'bounce',
        detail: 'General: smtp; 550 5.1.1 user unknown',
        source: 'ses',
        created_at: expect.any(Date),
      },
    ]);
    expect(logs).toEqual([
      {
        level: 'info',
        msg: 'mail: suppressed',
        reason: 'bounce',
        source: 'ses',
        snsMessageId: '95df01b4-ee98-5cb9-9903-4c221d41eb50',
      },
    ]);
    expect(JSON.stringify(logs)).not.toContain('recipient@example.com');
  });

  it('a complaint suppresses the recipient; SNS delivering it again changes nothing', async () => {
    const complaint = fixture('ses-complaint-event.json');
    expect(await handler(snsEvent(complaint))).toEqual({ suppressed: 1, known: 0, ignored: 0 });
    expect(await handler(snsEvent(complaint))).toEqual({ suppressed: 0, known: 1, ignored: 0 });
    expect((await listSuppressions(db)).map((s) => [s.address, s.reason, s.detail])).toEqual([
      ['recipient@example.com', 'complaint', 'abuse'],
    ]);
  });

  it('identity feedback notifications (notificationType) count too', async () => {
    expect(await handler(snsEvent(fixture('ses-bounce-notification.json')))).toEqual({
      suppressed: 1,
      known: 0,
      ignored: 0,
    });
    expect((await listSuppressions(db)).map((s) => s.address)).toEqual(['bounce@simulator.amazonses.com']);
  });

  it('transient bounces, deliveries, malformed messages and non-addresses suppress nothing', async () => {
    const transient = JSON.parse(fixture('ses-bounce-event.json'));
    transient.bounce.bounceType = 'Transient';
    transient.bounce.bounceSubType = 'MailboxFull';
    const delivery = {
      eventType: 'Delivery',
      mail: transient.mail,
      delivery: { recipients: ['recipient@example.com'] },
    };
    const notAnAddress = JSON.parse(fixture('ses-complaint-event.json'));
    notAnAddress.complaint.complainedRecipients = [{ emailAddress: 'a@b, c@d' }];
    const report = await handler(
      snsEvent(JSON.stringify(transient), JSON.stringify(delivery), 'not json', '{}', JSON.stringify(notAnAddress)),
    );
    expect(report).toEqual({ suppressed: 0, known: 0, ignored: 5 });
    expect(await listSuppressions(db)).toEqual([]);
  });
});
