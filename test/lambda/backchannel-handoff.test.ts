// The deployed back-channel logout path, run locally: the relay signs each due logout token and
// hands it to the mail hand-off queue (signed SigV4 SendMessage into a local stand-in for SQS); the
// mail sender function — the one that reaches the outside world — POSTs it to the relying party.
// 2xx is done; a 5xx or a redirect goes back to SQS (a batch item failure); a 400 is dropped.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailSenderHandler } from '../../service/aws/mail-sender-handler';
import type { Db } from '../../service/db/schema';
import { registerApplication } from '../../service/domain/applications';
import { documentSigningKeySource, rotateSigningKeyDocument } from '../../service/domain/signing-keys';
import { drainLogoutsOnce } from '../../service/mail/backchannel-sender';
import { sqsLogoutHandOff } from '../../service/mail/sqs-handoff-transport';
import type { MailTransport } from '../../service/mail/transport';
import { createTestDatabase } from '../support/db';

async function listen(handler: (path: string, body: string) => { status: number; body?: string }) {
  const seen: Array<{ path: string; body: string; contentType?: string }> = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ path: req.url ?? '', body, contentType: req.headers['content-type'] });
      const a = handler(req.url ?? '', body);
      res.writeHead(a.status, a.status === 302 ? { location: '/elsewhere' } : {}).end(a.body ?? '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const ISSUER = 'https://id.example.org';
let db: Db;
beforeAll(async () => {
  db = (await createTestDatabase()).db;
});

/** The mail path is not exercised here: a transport that fails the test if the handler ever mails. */
const noMail: MailTransport = {
  description: 'none',
  send: async () => {
    throw new Error('a logout hand-off was sent as mail');
  },
  close: async () => {},
};

describe('relay → SQS → mail sender function → relying party', () => {
  it('signs at the relay, POSTs from the sender; retryable answers go back to SQS, a 400 is dropped', async () => {
    const { document } = await rotateSigningKeyDocument(undefined, { idTokenLifetimeSeconds: 120, cacheSeconds: 1 });
    const keys = documentSigningKeySource(async () => document, { idTokenLifetimeSeconds: 120, cacheSeconds: 1 });
    const sqs = await listen(() => ({ status: 200, body: JSON.stringify({ MessageId: 'sqs-1' }) }));
    const rp = await listen((path) => ({
      status: path === '/ok' ? 200 : path === '/down' ? 503 : path === '/moved' ? 302 : 400,
    }));
    const paths = ['/ok', '/down', '/moved', '/refuse'];
    for (const [i, path] of paths.entries()) {
      const { application } = await registerApplication(db, {
        name: `RP ${path}`,
        redirectUris: ['https://rp.example/cb'],
        scopes: 'openid',
        backchannelLogoutUri: `${rp.url}${path}`,
      });
      await db
        .insertInto('backchannel_logout_deliveries')
        .values({
          application_id: application.id,
          client_id: application.uid,
          uri: application.backchannel_logout_uri!,
          sub: '7',
          sid: `${i}`.repeat(32),
          reason: 'sign_out',
        })
        .execute();
    }

    const round = await drainLogoutsOnce({
      db,
      signingKeys: keys,
      issuer: ISSUER,
      maxAttempts: 3,
      concurrency: 1,
      post: sqsLogoutHandOff({
        queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q',
        region: 'eu-west-1',
        credentials: CREDENTIALS,
        endpoint: `${sqs.url}/`,
      }),
    });
    expect(round).toEqual({ claimed: 4, sent: 4, retried: 0, failed: 0 });
    const rows = await db.selectFrom('backchannel_logout_deliveries').select(['status', 'response_status']).execute();
    expect(rows).toEqual(Array(4).fill({ status: 'sent', response_status: 202 }));
    expect(rp.seen).toEqual([]); // nothing leaves the VPC from the relay

    const handedOff = sqs.seen.map((s) => JSON.parse(JSON.parse(s.body).MessageBody));
    expect(handedOff.map((h) => [h.kind, new URL(h.uri).pathname])).toEqual(
      paths.map((p) => ['backchannel_logout', p]),
    );
    const logs: Array<Record<string, unknown>> = [];
    const handler = createMailSenderHandler({
      transport: noMail,
      log: (level, entry) => logs.push({ level, ...entry }),
    });
    const result = await handler({
      Records: handedOff.map((h, i) => ({ messageId: `m${i}`, body: JSON.stringify(h) })),
    });
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }] });
    expect(rp.seen.map((s) => s.path).sort()).toEqual(['/down', '/moved', '/ok', '/refuse']);
    const ok = rp.seen.find((s) => s.path === '/ok')!;
    expect(ok.contentType).toBe('application/x-www-form-urlencoded');
    const token = new URLSearchParams(ok.body).get('logout_token')!;
    const jwks = createLocalJWKSet({ keys: (await keys.load()).jwks });
    const { payload } = await jwtVerify(token, jwks, { issuer: ISSUER, typ: 'logout+jwt' });
    expect(payload).toMatchObject({ sub: '7', sid: '0'.repeat(32) });
    expect(logs.map((l) => l.msg).sort()).toEqual([
      'back-channel logout: failed, SQS will offer it again',
      'back-channel logout: failed, SQS will offer it again',
      'back-channel logout: refused, dropped',
      'back-channel logout: sent',
    ]);
    // No token in the logs.
    expect(JSON.stringify(logs)).not.toContain(token.split('.')[2]);
  });
});
