// The AWS Lambda handler (API Gateway HTTP API, payload v2) over the same Fastify app.
// Fastify boots during init so the first request does not pay for it.
import awsLambdaFastify from '@fastify/aws-lambda';
import { buildApp } from './app';
import { loadConfig } from './config';
import { createDb } from './db/create-db';

const config = loadConfig(process.env, { trustProxy: true });
if (!config.databaseUrl) throw new Error('DATABASE_URL is required on Lambda');
// One connection per Lambda instance: instances × 1 stays within the database's budget.
const { db } = createDb({ connectionString: config.databaseUrl, max: 1, applicationName: 'lanyard-lambda' });

const proxyPromise = buildApp({ db, config }).then(async (app) => {
  const proxy = awsLambdaFastify(app, { decorateRequest: false });
  await app.ready();
  return proxy;
});

export const handler = async (event: unknown, context: unknown) => (await proxyPromise)(event as any, context as any);
