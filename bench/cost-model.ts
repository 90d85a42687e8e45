// The cost model (docs/cost-model.md): what a million requests and 100,000 monthly active users cost
// on the deployed stack (API Gateway HTTP API → Lambda arm64 → RDS PostgreSQL, Secrets Manager),
// from the CPU per request and memory measured by bench/http.ts in the same `npm run bench`
// (bench/results/http.json) and the cold start of bench/cold-start.ts, beside Amazon Cognito's
// published per-MAU prices for the same users. Prints a Markdown table.
// Run: npx tsx bench/cost-model.ts   (after bench/http.ts; `npm run bench` runs it last)
import fs from 'node:fs';
import path from 'node:path';

/** us-east-1 list prices (USD), as published by AWS in 2026; see docs/cost-model.md for the sources. */
const PRICE = {
  /** Lambda arm64: per GB-second of billed duration (1 ms granularity), and per request. */
  lambdaGbSecond: 0.0000133334,
  lambdaRequest: 0.2 / 1e6,
  /** API Gateway HTTP API, first 300 million requests a month. */
  httpApiRequest: 1.0 / 1e6,
  /** RDS for PostgreSQL, single-AZ, on demand, per month (730 h), and gp3 storage per GB-month. */
  rdsMonthly: { 'db.t4g.micro': 0.016 * 730, 'db.t4g.small': 0.032 * 730, 'db.t4g.medium': 0.065 * 730 },
  rdsStorageGbMonth: 0.115,
  /** Secrets Manager: per secret-month (database, session keys, signing keys). */
  secretMonthly: 0.4,
  /** The Secrets Manager interface endpoint, per AZ-hour (two AZs). */
  endpointAzHour: 0.01,
  /** SES: per 1,000 e-mails. */
  sesPerThousand: 0.1,
  /** Amazon Cognito user pools, per MAU above the first 10,000 (Lite and Essentials tiers). */
  cognitoLite: 0.0055,
  cognitoEssentials: 0.015,
  cognitoFreeMau: 10_000,
} as const;

/** The stack's defaults (infra/config.ts): the API function's memory and the database. */
const LAMBDA_MEMORY_MB = 1024;
/** Lambda gives a function vCPU in proportion to memory: one full vCPU at 1,769 MB. */
const VCPU_SHARE = LAMBDA_MEMORY_MB / 1769;
/** A round trip to PostgreSQL inside the VPC, added to each request's compute (assumption). */
const ROUND_TRIP_MS = 1;

/**
 * What one monthly active user does in a month (assumptions of a collaboration service's web and
 * API use; change them to yours): scenario of bench/http.ts → requests, with the database round
 * trips test/perf pins for it.
 */
const USAGE: Array<{ scenario: string; perMau: number; roundTrips: number; what: string }> = [
  {
    scenario: 'password grant',
    perMau: 8,
    roundTrips: 4,
    what: 'sign-ins (argon2id; the sign-in form costs the same)',
  },
  { scenario: 'authorize (trusted) + code exchange', perMau: 8, roundTrips: 7, what: 'authorize + code exchanges' },
  { scenario: 'refresh_token grant', perMau: 40, roundTrips: 2, what: 'refreshes (2 h of use on 20 days)' },
  { scenario: 'GET /api/v4/user (PAT)', perMau: 150, roundTrips: 1, what: 'API reads by token' },
  { scenario: 'GET project notification settings', perMau: 20, roundTrips: 2, what: 'settings reads' },
  { scenario: 'PUT project notification settings', perMau: 2, roundTrips: 2, what: 'settings writes' },
];
/** Account e-mails (reset, confirmation, security alerts) and notification e-mails per MAU. */
const ACCOUNT_EMAILS_PER_MAU = 1;
const NOTIFICATION_EMAILS_PER_MAU = 30;
const COLD_STARTS_PER_MILLION = 50; // one per ~20,000 requests: a steadily used function stays warm

interface Sample {
  rps: number;
  cpuMs: number;
  rssMb: number;
}

const usd = (x: number) => (x >= 100 ? `$${x.toFixed(0)}` : x >= 1 ? `$${x.toFixed(2)}` : `$${x.toFixed(4)}`);

function main(): void {
  const results = path.join(__dirname, 'results');
  const httpFile = path.join(results, 'http.json');
  if (!fs.existsSync(httpFile)) throw new Error('bench/results/http.json is missing: run bench/http.ts first');
  const http = JSON.parse(fs.readFileSync(httpFile, 'utf8')) as { scenarios: Record<string, Sample>; at: string };
  const coldFile = path.join(results, 'cold-start.json');
  const cold = fs.existsSync(coldFile)
    ? (JSON.parse(fs.readFileSync(coldFile, 'utf8')) as { bundleMs: number })
    : { bundleMs: 150 };

  /** Billed Lambda ms of one request: its CPU at Lambda's vCPU share, plus its round trips. */
  const billedMs = (cpuMs: number, roundTrips: number) =>
    Math.max(1, Math.ceil(cpuMs / VCPU_SHARE + roundTrips * ROUND_TRIP_MS));
  const gbSeconds = (ms: number) => (ms / 1000) * (LAMBDA_MEMORY_MB / 1024);
  const perRequest = (ms: number) => gbSeconds(ms) * PRICE.lambdaGbSecond + PRICE.lambdaRequest + PRICE.httpApiRequest;
  const coldMs = billedMs(cold.bundleMs, 0);

  const line = (s = '') => process.stdout.write(`${s}\n`);
  line(
    `Measured ${http.at} (bench/results/http.json); Lambda arm64 ${LAMBDA_MEMORY_MB} MB (${VCPU_SHARE.toFixed(2)} vCPU), ${ROUND_TRIP_MS} ms per database round trip.`,
  );
  line();
  line('| request | CPU ms (measured) | billed ms | per million requests | peak RSS MB |');
  line('|---|---:|---:|---:|---:|');
  let monthlyMs = 0;
  let monthlyRequests = 0;
  for (const u of USAGE) {
    const s = http.scenarios[u.scenario];
    if (!s) throw new Error(`bench/results/http.json has no scenario "${u.scenario}"`);
    // A code flow pair is two requests; its CPU is per pair.
    const requests = u.scenario.includes('+') ? 2 : 1;
    const ms = billedMs(s.cpuMs, u.roundTrips);
    monthlyMs += ms * u.perMau;
    monthlyRequests += u.perMau * requests;
    line(
      `| ${u.scenario} | ${s.cpuMs.toFixed(3)} | ${ms} | ${usd(perRequest(ms / requests) * 1e6)} | ${s.rssMb.toFixed(0)} |`,
    );
  }
  line(
    `| cold start (${COLD_STARTS_PER_MILLION} per million) | | ${coldMs} | ${usd(COLD_STARTS_PER_MILLION * gbSeconds(coldMs) * PRICE.lambdaGbSecond)} | |`,
  );

  const mau = 100_000;
  const requests = monthlyRequests * mau;
  const lambdaAndApi =
    mau * gbSeconds(monthlyMs) * PRICE.lambdaGbSecond +
    requests * (PRICE.lambdaRequest + PRICE.httpApiRequest) +
    (requests / 1e6) * COLD_STARTS_PER_MILLION * gbSeconds(coldMs) * PRICE.lambdaGbSecond;
  const database = PRICE.rdsMonthly['db.t4g.small'] + 20 * PRICE.rdsStorageGbMonth;
  const fixed = 3 * PRICE.secretMonthly + 2 * 730 * PRICE.endpointAzHour;
  const mail = ((mau * ACCOUNT_EMAILS_PER_MAU) / 1000) * PRICE.sesPerThousand;
  const notifications = ((mau * NOTIFICATION_EMAILS_PER_MAU) / 1000) * PRICE.sesPerThousand;
  const lanyard = lambdaAndApi + database + fixed + mail;
  const billable = mau - PRICE.cognitoFreeMau;
  line();
  line(
    `Per month for ${mau.toLocaleString('en')} MAU (${(monthlyRequests).toFixed(0)} requests each, ${(requests / 1e6).toFixed(1)} million in all):`,
  );
  line();
  line('| item | per month |');
  line('|---|---:|');
  line(`| API Gateway + Lambda | ${usd(lambdaAndApi)} |`);
  line(`| RDS db.t4g.small, 20 GB gp3 | ${usd(database)} |`);
  line(`| Secrets Manager (3 secrets, interface endpoint in 2 AZs) | ${usd(fixed)} |`);
  line(`| SES, account e-mails (${ACCOUNT_EMAILS_PER_MAU} per MAU) | ${usd(mail)} |`);
  line(`| **Lanyard, identity** | **${usd(lanyard)}** (${usd(lanyard / mau)} per MAU) |`);
  line(
    `| Amazon Cognito Lite (${billable.toLocaleString('en')} MAU above the free 10,000) | ${usd(billable * PRICE.cognitoLite)} |`,
  );
  line(`| Amazon Cognito Essentials | ${usd(billable * PRICE.cognitoEssentials)} |`);
  line(
    `| beyond identity: notification e-mails through SES (${NOTIFICATION_EMAILS_PER_MAU} per MAU; Cognito sends none) | ${usd(notifications)} |`,
  );
}

main();
