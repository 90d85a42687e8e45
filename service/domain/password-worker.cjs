// One thread of passwords.ts's hashing pool: runs one hash at a time, synchronously, at the lowest
// OS priority (nice 19) on Linux, so the event loop and PostgreSQL preempt it the moment they have
// work while it still soaks up every idle cycle (the pool has one thread per core). Plain
// CommonJS, so a thread loads it without a TypeScript loader (10 MB per thread instead of 17);
// built beside index.js in the Lambda bundles (infra/build/bundle.ts). It owns no rule:
// parameters, salts, NFKC and the comparison of scrypt keys stay in passwords.ts, which also
// types the messages (PasswordJob, PasswordAnswer).
'use strict';
const { scryptSync } = require('node:crypto');
const { readlinkSync } = require('node:fs');
const { setPriority } = require('node:os');
const { basename } = require('node:path');
const { parentPort } = require('node:worker_threads');
const { hashSync, verifySync } = require('@node-rs/argon2');

/** The lowest priority for this thread alone: Linux names a thread by its id in setpriority(2). */
function lowerThisThreadsPriority() {
  try {
    setPriority(Number(basename(readlinkSync('/proc/thread-self'))), 19);
  } catch {
    // No /proc/thread-self (not Linux) or not permitted: hash at the process's priority.
  }
}

function run(job) {
  switch (job.op) {
    case 'argon2-hash':
      return hashSync(job.password, job.options);
    case 'argon2-verify':
      // @node-rs/argon2 compares in constant time.
      return verifySync(job.phc, job.password);
    case 'scrypt':
      return scryptSync(job.password, job.salt, job.keyLength, job.options);
    default:
      throw new Error(`unknown password job ${job.op}`);
  }
}

if (parentPort) {
  const port = parentPort;
  lowerThisThreadsPriority();
  port.on('message', (job) => {
    let answer;
    try {
      answer = { ok: true, value: run(job) };
    } catch (err) {
      answer = { ok: false, message: err.message };
    }
    port.postMessage(answer);
  });
}
