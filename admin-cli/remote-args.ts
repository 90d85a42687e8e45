// The flags that send a command to a deployed stack, and the argv the admin function receives.
// Pure: the AWS SDK lives in remote.ts, loaded only by the process entry.

export interface RemoteArgs {
  function?: string;
  stack?: string;
  region?: string;
}

export const wantsRemote = (args: RemoteArgs): boolean => args.function !== undefined || args.stack !== undefined;

/**
 * The argv the function receives: the operator's, minus what only makes sense here (the target
 * flags, a password given on the command line), plus what was settled here (the password now
 * travels as stdin; a confirmed destructive command carries --yes).
 */
export function forwardedArgv(raw: readonly string[], settled: { password: boolean; confirmed: boolean }): string[] {
  const withValue = new Set(['--function', '--stack', '--region', '--password']);
  const flags = new Set(['--password-stdin', '--passwordStdin', '--no-password-stdin']);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i++) {
    const arg = raw[i];
    if (arg === '--') {
      out.push(...raw.slice(i));
      break;
    }
    const name = arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg;
    if (withValue.has(name)) {
      if (!arg.includes('=')) i++;
      continue;
    }
    if (flags.has(name)) continue;
    out.push(arg);
  }
  if (settled.password) out.push('--password-stdin');
  if (settled.confirmed && !out.includes('--yes') && !out.includes('-y')) out.push('--yes');
  return out;
}
