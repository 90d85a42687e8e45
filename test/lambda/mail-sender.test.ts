// The deployed mail path, run locally: the relay's SQS hand-off (signed SigV4 JSON requests) into
// a local stand-in for SQS, and the sender function's handler sending those messages with the
// real SES v2 client against a local stand-in for SES. Temporary SES failures go back to SQS
// (batch item failures); a message SES refuses is dropped; the raw bytes and Message-ID reach SES
// unchanged.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import { buildMessage } from '../../service/domain/mail/message';
import { enqueueMail } from '../../service/domain/mail/outbox';
import { renderMail } from '../../service/domain/mail/render';
import { createMailSenderHandler } from '../../service/aws/mail-sender-handler';
import { drainOnce } from '../../service/mail/sender';
import { sesTransport } from '../../service/mail/ses-transport';
import { sqsHandOffTransport } from '../../service/mail/sqs-handoff-transport';
import { createTestDatabase } from '../support/db';

interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

async function stub(answer: (seen: Seen) => { status: number; headers?: Record<string, string>; body: unknown }) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', () => {
      const s = { path: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : undefined };
      seen.push(s);
      const a = answer(s);
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      res.end(JSON.stringify(a.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
let db: Db;
const saved = { ...process.env };
beforeAll(async () => {
  db = (await createTestDatabase()).db;
  // The SES client's default credential chain reads these, as on Lambda.
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    AWS_REGION: 'eu-west-1',
  });
});
afterAll(() => {
  process.env = saved;
});

let sesMode: 'ok' | 'throttled' | 'rejected' = 'ok';
beforeEach(() => {
  sesMode = 'ok';
});

describe('relay → SQS → sender → SES', () => {
  it('hands each message to SQS signed, then sends its exact bytes with SES through the configuration set', async () => {
    const sqs = await stub(() => ({ status: 200, body: { MessageId: `sqs-${Math.random().toString(16).slice(2)}` } }));
    const ses = await stub(() =>
      sesMode === 'ok'
        ? { status: 200, body: { MessageId: '0102-ses-id' } }
        : sesMode === 'throttled'
          ? { status: 429, headers: { 'x-amzn-errortype': 'TooManyRequestsException' }, body: { message: 'Slow down' } }
          : {
              status: 400,
              headers: { 'x-amzn-errortype': 'MessageRejected' },
              body: { message: 'Email address is not verified.' },
            },
    );
    const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/lanyard-prod-mail';

    // The relay: the outbox drained onto the queue.
    const m = buildMessage(
      { publicUrl: 'https://id.example.org', from: 'Lanyard <noreply@id.example.org>' },
      { name: 'Ada', subject: 'Via SES', paragraphs: ['Hello.'] },
    );
    const { messageId } = await enqueueMail(db, { ...m, to: 'ada@example.com', kind: 'test' });
    const handOff = sqsHandOffTransport({
      queueUrl,
      region: 'eu-west-1',
      credentials: CREDENTIALS,
      endpoint: `${sqs.url}/`,
    });
    expect(
      await drainOnce({ db, transport: handOff, from: 'x@id.example.org', maxAttempts: 3, concurrency: 1 }),
    ).toMatchObject({
      sent: 1,
    });
    const row = await db
      .selectFrom('mail_outbox')
      .select([
        'status',
        'transport_response',
        'raw',
        'message_id',
        'to_address',
        'from_address',
        'subject',
        'text_body',
        'html_body',
        'headers',
        'created_at',
      ])
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('sent');
    // Nothing rendered is stored: the bytes are the row's rendering (deterministic, as `mail show` prints it).
    expect(row.raw).toBeNull();
    const rendered = await renderMail(row, 'x@id.example.org');
    expect(row.transport_response).toMatch(/^queued for Amazon SES \(SQS message sqs-[0-9a-f]+\)$/);

    expect(sqs.seen).toHaveLength(1);
    const [put] = sqs.seen;
    expect(put.headers['x-amz-target']).toBe('AmazonSQS.SendMessage');
    expect(put.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(put.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/sqs\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=[0-9a-f]{64}$/,
    );
    expect(put.body.QueueUrl).toBe(queueUrl);
    const handedOff = JSON.parse(put.body.MessageBody);
    expect(handedOff).toEqual({ messageId, from: 'noreply@id.example.org', to: 'ada@example.com', raw: rendered });

    // The sender function: the SQS event in, SES SendEmail out.
    const logs: Record<string, unknown>[] = [];
    const handler = createMailSenderHandler({
      transport: sesTransport({ region: 'eu-west-1', configurationSet: 'lanyard-prod-mail', endpoint: ses.url }),
      log: (level, entry) => logs.push({ level, ...entry }),
    });
    const event = { Records: [{ messageId: 'sqs-1', body: put.body.MessageBody }] };
    expect(await handler(event)).toEqual({ batchItemFailures: [] });
    expect(ses.seen).toHaveLength(1);
    const [send] = ses.seen;
    expect(send.path).toBe('/v2/email/outbound-emails');
    expect(send.headers.authorization).toMatch(/Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/ses\/aws4_request/);
    expect(send.body).toMatchObject({
      FromEmailAddress: 'noreply@id.example.org',
      Destination: { ToAddresses: ['ada@example.com'] },
      ConfigurationSetName: 'lanyard-prod-mail',
    });
    const sentRaw = Buffer.from(send.body.Content.Raw.Data, 'base64').toString('utf8');
    expect(sentRaw).toBe(rendered);
    expect((await simpleParser(sentRaw)).messageId).toBe(messageId);
    expect(logs).toEqual([
      { level: 'info', msg: 'mail: sent', messageId, detail: 'accepted by Amazon SES as 0102-ses-id' },
    ]);

    // SES throttling: the record goes back to SQS; SES refusing the message: dropped, logged.
    sesMode = 'throttled';
    expect(await handler(event)).toEqual({ batchItemFailures: [{ itemIdentifier: 'sqs-1' }] });
    sesMode = 'rejected';
    expect(await handler(event)).toEqual({ batchItemFailures: [] });
    expect(logs.at(-1)).toMatchObject({ level: 'error', msg: 'mail: refused, dropped', messageId });
    expect(String(logs.at(-1)?.detail)).toMatch(
      /^Amazon SES: MessageRejected \(HTTP 400\): Email address is not verified\.$/,
    );
    // Not a hand-off message: dropped, not retried forever.
    expect(await handler({ Records: [{ messageId: 'junk', body: '{"x":1}' }] })).toEqual({ batchItemFailures: [] });
  });

  it('SQS refusing the hand-off leaves the message pending for the next relay run', async () => {
    await db.deleteFrom('mail_outbox').execute();
    const sqs = await stub(() => ({
      status: 400,
      body: { __type: 'com.amazonaws.sqs#QueueDoesNotExist', message: 'The specified queue does not exist.' },
    }));
    await enqueueMail(db, { to: 'a@example.com', subject: 'S', text: 't', html: 'h', kind: 'test' });
    const handOff = sqsHandOffTransport({
      queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/missing',
      region: 'eu-west-1',
      credentials: CREDENTIALS,
      endpoint: `${sqs.url}/`,
    });
    expect(
      await drainOnce({ db, transport: handOff, from: 'x@id.example.org', maxAttempts: 3, concurrency: 1 }),
    ).toMatchObject({
      retried: 1,
    });
    const row = await db.selectFrom('mail_outbox').select(['status', 'last_error']).executeTakeFirstOrThrow();
    expect(row).toEqual({
      status: 'pending',
      last_error: 'SQS SendMessage: QueueDoesNotExist: The specified queue does not exist.',
    });
  });
});
