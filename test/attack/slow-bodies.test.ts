// Attack (issue 22): "no request-body timeout (20 connections trickling a body stayed open 180 s)".
// The server as `npm start` builds it (buildApp + listen) with REQUEST_TIMEOUT=2: 20 clients that
// trickle a body one byte a second, and one that trickles its headers, are each answered 408 and
// disconnected instead of being held; an ordinary request is served meanwhile.
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { loadConfig } from '../../service/config';
import { testHome } from '../support/app';
import { createTestDatabase } from '../support/db';

let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  const { db } = await createTestDatabase();
  const config = loadConfig({ LOG_LEVEL: 'silent', REQUEST_TIMEOUT: '2' }, { home: testHome() });
  app = await buildApp({ db, config, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as net.AddressInfo).port;
});
afterAll(() => app?.close());

/** Send `head` at once, then one byte of `trickle` a second until the server closes the socket. */
function trickle(head: string, drip: string): Promise<{ response: string; sent: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let response = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => {
        if (sent < drip.length && !socket.destroyed) socket.write(drip[sent++]);
      }, 1000);
    });
    socket.on('data', (d) => (response += d));
    socket.on('error', () => undefined); // a reset after the 408 is a close too
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ response, sent });
    });
    setTimeout(() => reject(new Error('the server kept a trickling connection open for 60 s')), 60_000).unref();
  });
}

describe('no request-body timeout', () => {
  it('20 connections trickling a body are answered 408 and closed; the server keeps serving', async () => {
    const body = `grant_type=password&username=alice&password=${'x'.repeat(200)}`;
    const head =
      `POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
      `Content-Length: ${body.length}\r\n\r\n`;
    const clients = Array.from({ length: 20 }, () => trickle(head, body));
    // Meanwhile an ordinary request is served.
    const health = await fetch(`http://127.0.0.1:${port}/-/health`);
    expect(health.status).toBe(200);
    for (const { response, sent } of await Promise.all(clients)) {
      expect(response).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      // Closed long before the body could have been completed.
      expect(sent).toBeLessThan(body.length);
    }
  }, 90_000);

  it('a client trickling its headers is answered 408 and closed', async () => {
    const headers = `X-Slow: ${'a'.repeat(100)}\r\n\r\n`;
    const { response, sent } = await trickle('GET /-/health HTTP/1.1\r\nHost: 127.0.0.1\r\n', headers);
    expect(response).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(sent).toBeLessThan(headers.length);
  }, 90_000);
});
