// One thread of passwords.ts's hashing pool: runs one hash at a time, synchronously, at the lowest
// OS priority (nice 19) on Linux, so the event loop and PostgreSQL preempt it the moment they have
// work while it still soaks up every idle cycle (the pool is as large as the machine has cores).
// Built beside index.js in the Lambda bundles (infra/build/bundle.ts); from source, passwords.ts
// loads it through tsx. It owns no rule: parameters, salts, NFKC and the comparison of scrypt keys
// stay in passwords.ts.
import { type ScryptOptions, scryptSync } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { basename } from 'node:path';
import { parentPort } from 'node:worker_threads';
import { type Options as Argon2Options, hashSync, verifySync } from '@node-rs/argon2';

export type PasswordJob =
  | { op: 'argon2-hash'; password: string; options: Argon2Options }
  | { op: 'argon2-verify'; phc: string; password: string }
  | { op: 'scrypt'; password: string; salt: Uint8Array; keyLength: number; options: ScryptOptions };

export type PasswordAnswer = { ok: true; value: string | boolean | Uint8Array } | { ok: false; message: string };

/** The lowest priority for this thread alone: Linux names a thread by its id in setpriority(2). */
function lowerThisThreadsPriority(): void {
  try {
    setPriority(Number(basename(readlinkSync('/proc/thread-self'))), 19);
  } catch {
    // No /proc/thread-self (not Linux) or not permitted: hash at the process's priority.
  }
}

function run(job: PasswordJob): string | boolean | Uint8Array {
  switch (job.op) {
    case 'argon2-hash':
      return hashSync(job.password, job.options);
    case 'argon2-verify':
      // @node-rs/argon2 compares in constant time.
      return verifySync(job.phc, job.password);
    case 'scrypt':
      return scryptSync(job.password, job.salt, job.keyLength, job.options);
  }
}

if (parentPort) {
  const port = parentPort;
  lowerThisThreadsPriority();
  port.on('message', (job: PasswordJob) => {
    let answer: PasswordAnswer;
    try {
      answer = { ok: true, value: run(job) };
    } catch (err) {
      answer = { ok: false, message: (err as Error).message };
    }
    port.postMessage(answer);
  });
}
