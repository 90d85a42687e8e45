// `npm run bench`: every benchmark in turn, each in its own process (so one's memory and JIT state
// cannot colour another's figures). Each prints its own figures and ratios against a baseline
// measured in the same run.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

// cold-start.ts before http.ts: http.ts prints every target line, cold start and bundle size included.
const BENCHES = [
  'password-hash.ts',
  'cold-start.ts',
  'recipients.ts',
  'notification-intake.ts',
  'retention.ts',
  'mail.ts',
  'http.ts',
  'cost-model.ts',
];
const tsx = path.join(__dirname, '..', 'node_modules', '.bin', 'tsx');
let failed = 0;
for (const [i, file] of BENCHES.entries()) {
  console.log(`\n[${i + 1}/${BENCHES.length}] bench/${file}`);
  const r = spawnSync(tsx, [path.join(__dirname, file)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
