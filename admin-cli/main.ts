// The `lanyard-admin` process entry: the real terminal and environment around runCli.
import { runCli } from './cli';
import { processIo } from './io';
import { lambdaTransport } from './remote';

runCli(process.argv.slice(2), { io: processIo(), remote: lambdaTransport() }).then(
  (code) => {
    // Set, not exit(): stdout may still be draining into a pipe.
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`lanyard-admin: unexpected error: ${(err as Error)?.message ?? err}\n`);
    process.exitCode = 2;
  },
);
