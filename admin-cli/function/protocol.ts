// The admin Lambda's payload, shared by the CLI's remote transport and the handler.
// The function is invoked through IAM (lambda:InvokeFunction) only; it has no HTTP route.

export interface AdminInvocation {
  /** The CLI arguments, as typed after `lanyard-admin` (remote-only flags removed). */
  argv: string[];
  /** Standard input for --password-stdin (the CLI reads or prompts for it on the operator's machine). */
  stdin?: string;
  /** Who is invoking: the IAM caller ARN the CLI resolved (CloudTrail holds the authoritative record). */
  actor?: string;
}

export interface AdminInvocationResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** The problem with a payload, or undefined when it is well-formed. */
export function invocationProblem(event: unknown): string | undefined {
  const e = event as Partial<AdminInvocation> | null;
  if (!e || typeof e !== 'object') return 'the payload must be an object {"argv": [...]}';
  if (!Array.isArray(e.argv) || !e.argv.every((a) => typeof a === 'string'))
    return '"argv" must be an array of strings';
  if (e.stdin !== undefined && typeof e.stdin !== 'string') return '"stdin" must be a string';
  if (e.actor !== undefined && (typeof e.actor !== 'string' || e.actor.length > 2048))
    return '"actor" must be a string';
  return undefined;
}

export function isInvocationResult(value: unknown): value is AdminInvocationResult {
  const v = value as Partial<AdminInvocationResult> | null;
  return !!v && Number.isInteger(v.exitCode) && typeof v.stdout === 'string' && typeof v.stderr === 'string';
}
