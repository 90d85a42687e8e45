// The `lanyard-admin` process entry: the real terminal, environment and AWS transport around runCli.
import { runCli } from './cli';
import { processIo } from './io';
import { lambdaTransport } from './remote';

// `lanyard-admin users list | head -1`: a reader that goes away is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
});

runCli(process.argv.slice(2), { io: processIo(), env: process.env, remote: lambdaTransport() }).then(
  (code) => {
    // Set, not exit(): stdout may still be draining into a pipe.
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`lanyard-admin: unexpected error: ${(err as Error)?.message ?? err}\n`);
    process.exitCode = 2;
  },
);
