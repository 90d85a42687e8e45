// Password hashing: argon2id at OWASP's recommended m=19 MiB, t=2, p=1 through @node-rs/argon2
// (a native binding with prebuilt linux-x64 and linux-arm64 binaries; the Lambda bundle carries
// the arm64 one, see infra/build/bundle.ts), stored as a PHC string so the cost can be raised
// later (needsRehash). Hashes made by the first release (scrypt N=2^17) still verify and are
// replaced on the next successful sign-in. Every hash runs on a small pool of worker threads
// (password-worker.cjs) that hash at the lowest OS priority, never on the event loop.
import { randomBytes, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Options as Argon2Options } from '@node-rs/argon2';

export interface PasswordParams {
  /** Memory in KiB. */
  memoryCost: number;
  /** Passes over the memory. */
  timeCost: number;
  parallelism: number;
}

/** OWASP Password Storage Cheat Sheet, argon2id: m=19 MiB (19456 KiB), t=2, p=1. */
export const DEFAULT_PARAMS: PasswordParams = { memoryCost: 19456, timeCost: 2, parallelism: 1 };
const KEY_LENGTH = 32;
// Algorithm.Argon2id in @node-rs/argon2 (a const enum, which isolated modules cannot import).
const ARGON2ID = 2 as Argon2Options['algorithm'];

// One thread per core, each hashing one password at a time: the pool is the bound on hashes at
// once (19 MiB each). The threads run at nice 19, so the event loop and PostgreSQL preempt them
// as soon as they have work, and GET /api/v4/user's p99 during a burst of sign-ins stays near its
// idle figure while the hashes still take every idle cycle (issue 30: the password grant ≥ 0.8×
// the raw argon2id rate, p99 ≤ 2× idle, RSS ≤ 200 MB; docs/benchmarks.md). A Lambda instance
// serves one request at a time, so it hashes one at a time anyway.
const POOL_SIZE = Math.max(1, availableParallelism());
// The thread's code beside this module: password-worker.cjs from source, password-worker.js
// beside index.js in a bundle (infra/build/bundle.ts builds it there).
const WORKER_FILE = path.join(__dirname, __filename.endsWith('.ts') ? 'password-worker.cjs' : 'password-worker.js');
// A thread that only hashes needs little JavaScript heap (the 19 MiB blocks are native memory).
const WORKER_LIMITS = { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 4 };

/** What password-worker.cjs runs: one hash, with everything it needs in the message. */
type PasswordJob =
  | { op: 'argon2-hash'; password: string; options: Argon2Options }
  | { op: 'argon2-verify'; phc: string; password: string }
  | { op: 'scrypt'; password: string; salt: Uint8Array; keyLength: number; options: ScryptOptions };
/** What it answers: the hash, the verdict or the derived key; or the error's message. */
type PasswordAnswer = { ok: true; value: string | boolean | Uint8Array } | { ok: false; message: string };

interface Queued {
  job: PasswordJob;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/** A thread of the pool and the jobs it holds, in the order it answers them. */
interface PoolThread {
  worker: Worker;
  jobs: Queued[];
}

// Each thread holds its next job while it hashes one, so it starts the next the moment it is done
// rather than after its answer has crossed a busy event loop; it still hashes one at a time.
const JOBS_PER_THREAD = 2;
const threads: PoolThread[] = [];
const queue: Queued[] = [];

function startThread(): PoolThread {
  // Not this process's --import flags (tsx, from source): the thread's code is plain CommonJS.
  const worker = new Worker(WORKER_FILE, { execArgv: [], resourceLimits: WORKER_LIMITS });
  const thread: PoolThread = { worker, jobs: [] };
  worker.on('message', (answer: PasswordAnswer) => {
    const done = thread.jobs.shift()!;
    // A thread at work keeps the process alive until its answer; an idle one does not.
    if (thread.jobs.length === 0) worker.unref();
    if (answer.ok) done.resolve(answer.value);
    else done.reject(new Error(answer.message));
    dispatch();
  });
  const fail = (err: Error) => {
    // The thread is gone or broken: its jobs fail, and the next job starts a fresh thread.
    const at = threads.indexOf(thread);
    if (at < 0) return;
    threads.splice(at, 1);
    for (const job of thread.jobs.splice(0)) job.reject(err);
    void worker.terminate();
    dispatch();
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the password hashing thread exited (${code})`)));
  threads.push(thread);
  return thread;
}

/** Run one job on the pool: an idle thread, a new one while under POOL_SIZE, or the least busy. */
function runJob<T extends string | boolean | Uint8Array>(job: PasswordJob): Promise<T> {
  return new Promise((resolve, reject) => {
    queue.push({ job, resolve: resolve as (value: unknown) => void, reject });
    dispatch();
  });
}

function dispatch(): void {
  while (queue.length > 0) {
    let thread: PoolThread | undefined;
    for (const t of threads)
      if (t.jobs.length < JOBS_PER_THREAD && (!thread || t.jobs.length < thread.jobs.length)) thread = t;
    if ((!thread || thread.jobs.length > 0) && threads.length < POOL_SIZE) thread = startThread();
    if (!thread) return;
    const queued = queue.shift()!;
    thread.jobs.push(queued);
    thread.worker.ref();
    thread.worker.postMessage(queued.job);
  }
}

let testParams: PasswordParams | undefined;
/**
 * Tests may lower the cost (never the service): a seam in the module's own state, so it cannot
 * live in test/.
 * @internal
 */
export function setPasswordParamsForTesting(params: PasswordParams | undefined): void {
  testParams = params;
  dummyHash = undefined;
}
const currentParams = (): PasswordParams => testParams ?? DEFAULT_PARAMS;

/** `$argon2id$v=19$m=19456,t=2,p=1$<salt b64>$<hash b64>` */
export function hashPassword(password: string, params: PasswordParams = currentParams()): Promise<string> {
  return runJob<string>({
    op: 'argon2-hash',
    password: password.normalize('NFKC'),
    options: {
      algorithm: ARGON2ID,
      memoryCost: params.memoryCost,
      timeCost: params.timeCost,
      parallelism: params.parallelism,
      outputLen: KEY_LENGTH,
      salt: randomBytes(16),
    },
  });
}

const ARGON2ID_PHC = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/;
const SCRYPT_PHC = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

function argon2Params(phc: string): PasswordParams | undefined {
  const m = ARGON2ID_PHC.exec(phc);
  return m ? { memoryCost: Number(m[1]), timeCost: Number(m[2]), parallelism: Number(m[3]) } : undefined;
}

/** The first release's scrypt hashes: verified (never made) so their owners can sign in once more. */
async function verifyScrypt(password: string, m: RegExpExecArray): Promise<boolean> {
  const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const salt = Buffer.from(m[4], 'base64');
  const expected = Buffer.from(m[5], 'base64');
  const N = 2 ** ln;
  const options: ScryptOptions = { N, r, p, maxmem: 128 * N * r * 2 + 1024 * 1024 };
  const key = await runJob<Uint8Array>({
    op: 'scrypt',
    password: password.normalize('NFKC'),
    salt,
    keyLength: expected.length,
    options,
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

// A fixed hash to verify against when there is no user, so "no such user" costs one hash too.
let dummyHash: Promise<string> | undefined;

/** Verify a password against a PHC string; a missing or unreadable hash still spends one hash. */
export async function verifyPassword(password: string, phc: string | null | undefined): Promise<boolean> {
  if (phc && argon2Params(phc)) {
    return runJob<boolean>({ op: 'argon2-verify', phc, password: password.normalize('NFKC') });
  }
  const scrypt = phc ? SCRYPT_PHC.exec(phc) : null;
  if (scrypt) return verifyScrypt(password, scrypt);
  dummyHash ??= hashPassword('lanyard-dummy-password');
  const dummy = await dummyHash;
  await runJob<boolean>({ op: 'argon2-verify', phc: dummy, password: password.normalize('NFKC') });
  return false;
}

/** True when the stored hash is not argon2id at today's cost or more: rehash on the next sign-in. */
export function needsRehash(phc: string): boolean {
  const have = argon2Params(phc);
  if (!have) return true;
  const want = currentParams();
  return have.memoryCost < want.memoryCost || have.timeCost < want.timeCost || have.parallelism < want.parallelism;
}

export const MIN_PASSWORD_LENGTH = 8;
/** What is wrong with a new password, as a predicate ("is too short …") each caller gives its subject. */
export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `is too short (minimum is ${MIN_PASSWORD_LENGTH} characters)`;
  if (password.length > 1024) return 'is too long (maximum is 1024 characters)';
  return undefined;
}
