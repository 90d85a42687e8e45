// The remote transport: `--function NAME|ARN` (or `--stack NAME`, resolved from the Pulumi stack's
// `adminFunctionName` output) sends the command to the stack's admin Lambda with the AWS SDK's
// InvokeCommand. The function runs the same command code against the database and returns what
// it printed; no network path from the operator to the database is needed.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { LambdaClientConfig } from '@aws-sdk/client-lambda';
import { isInvocationResult, type AdminInvocation, type AdminInvocationResult } from './function/protocol';
import { UsageError, UserError } from './errors';
import type { RemoteArgs } from './remote-args';

export interface RemoteOptions {
  /** Merged into the SDK clients' configuration (tests: a stubbed requestHandler, static credentials). */
  clientConfig?: Partial<LambdaClientConfig>;
  /** Where to look for the Pulumi project (default: infra/ or the repository root). */
  pulumiCwd?: string;
}

export interface RemoteFunction {
  functionName: string;
  region?: string;
}

/** The admin function's failure (an unhandled error in the function): not the operator's fault. */
export class RemoteFunctionError extends Error {}

const ARN_RE = /^arn:aws[a-z-]*:lambda:([a-z0-9-]+):\d{12}:function:[A-Za-z0-9_-]+(:[A-Za-z0-9$_-]+)?$/;

export async function resolveRemoteFunction(
  args: RemoteArgs,
  env: NodeJS.ProcessEnv,
  options: RemoteOptions = {},
): Promise<RemoteFunction> {
  if (args.function !== undefined && args.stack !== undefined)
    throw new UsageError('give --function or --stack, not both');
  if (args.function !== undefined) {
    const fn = String(args.function).trim();
    if (!fn) throw new UsageError('--function needs the admin function name or ARN');
    return { functionName: fn, region: args.region ?? ARN_RE.exec(fn)?.[1] };
  }
  const stack = String(args.stack ?? '').trim();
  if (!stack) throw new UsageError('--stack needs a Pulumi stack name');
  const outputs = await pulumiStackOutputs(stack, env, options.pulumiCwd);
  const fn = outputs.adminFunctionName ?? outputs.adminFunctionArn;
  if (typeof fn !== 'string' || !fn) {
    throw new UserError(
      `the stack "${stack}" has no adminFunctionName output (is it deployed with the admin function?)`,
    );
  }
  const outputRegion = [outputs.region, outputs.awsRegion].find((r): r is string => typeof r === 'string');
  let region = args.region ?? ARN_RE.exec(fn)?.[1] ?? outputRegion;
  // The stack's own `aws:region`, unless the operator's environment names one.
  if (!region && !env.AWS_REGION && !env.AWS_DEFAULT_REGION)
    region = await pulumiConfigRegion(stack, env, options.pulumiCwd);
  return { functionName: fn, region };
}

/** `pulumi stack output --json --stack NAME`: the Pulumi CLI may be absent, so say so clearly. */
export async function pulumiStackOutputs(
  stack: string,
  env: NodeJS.ProcessEnv,
  cwd = pulumiProjectDir(),
): Promise<Record<string, unknown>> {
  const { code, stdout, stderr } = await pulumi(['stack', 'output', '--json', '--stack', stack], env, cwd);
  if (code !== 0) {
    const why =
      stderr
        .split('\n')
        .map((l) => l.trim())
        .find(Boolean) ?? `exit code ${code}`;
    throw new UserError(`pulumi stack output --stack ${stack} failed: ${why.replace(/^error:\s*/i, '')}`);
  }
  try {
    const parsed = JSON.parse(stdout);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new UserError(`pulumi stack output --stack ${stack} did not print a JSON object`);
}

async function pulumiConfigRegion(
  stack: string,
  env: NodeJS.ProcessEnv,
  cwd = pulumiProjectDir(),
): Promise<string | undefined> {
  const { code, stdout } = await pulumi(['config', 'get', 'aws:region', '--stack', stack], env, cwd);
  return code === 0 && /^[a-z]{2}(-[a-z]+)+-\d$/.test(stdout.trim()) ? stdout.trim() : undefined;
}

function pulumi(args: string[], env: NodeJS.ProcessEnv, cwd = pulumiProjectDir()) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn('pulumi', args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'ENOENT'
          ? new UserError(
              "--stack needs the Pulumi CLI, which is not installed here; pass --function with the stack's adminFunctionName output instead",
            )
          : e,
      ),
    );
    child.on('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
  });
}

function pulumiProjectDir(): string {
  const root = path.resolve(__dirname, '..');
  for (const dir of [path.join(root, 'infra'), root]) if (existsSync(path.join(dir, 'Pulumi.yaml'))) return dir;
  return process.cwd();
}

/** The IAM identity the operator's credentials resolve to (recorded by the function's audit event). */
export async function callerIdentity(target: RemoteFunction, options: RemoteOptions = {}): Promise<string | undefined> {
  const { STSClient, GetCallerIdentityCommand } = await import('@aws-sdk/client-sts');
  const client = new STSClient({ maxAttempts: 2, ...(options.clientConfig as object), ...definedRegion(target) });
  try {
    return (await client.send(new GetCallerIdentityCommand({}))).Arn;
  } catch {
    return undefined; // the invoke below reports credential problems with a better message
  } finally {
    client.destroy();
  }
}

export async function invokeAdminFunction(
  target: RemoteFunction,
  payload: AdminInvocation,
  options: RemoteOptions = {},
): Promise<AdminInvocationResult> {
  const { LambdaClient, InvokeCommand } = await import('@aws-sdk/client-lambda');
  // One attempt: a retried invoke after a lost response could run a command twice.
  const client = new LambdaClient({ ...options.clientConfig, maxAttempts: 1, ...definedRegion(target) });
  try {
    const out = await client.send(
      new InvokeCommand({
        FunctionName: target.functionName,
        InvocationType: 'RequestResponse',
        Payload: new TextEncoder().encode(JSON.stringify(payload)),
      }),
    );
    const text = out.Payload ? new TextDecoder().decode(out.Payload) : '';
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (out.FunctionError) {
      const e = (body ?? {}) as { errorType?: string; errorMessage?: string };
      throw new RemoteFunctionError(
        `the admin function failed: ${[e.errorType, e.errorMessage].filter(Boolean).join(': ') || out.FunctionError}`,
      );
    }
    if (!isInvocationResult(body))
      throw new RemoteFunctionError(`the admin function ${target.functionName} returned an unexpected response`);
    return body;
  } catch (err) {
    // Name the region the SDK settled on (AWS_REGION, the profile) when the target had none.
    const region = target.region ?? (await client.config.region().catch(() => undefined));
    throw describeAwsError(err, { ...target, region });
  } finally {
    client.destroy();
  }
}

/** The function's region wins over the SDK's default (AWS_REGION, the profile) when it is known. */
const definedRegion = (target: RemoteFunction) => (target.region ? { region: target.region } : {});

/** AWS failures the operator can fix, as one line each; anything else stays an unexpected failure. */
function describeAwsError(err: unknown, target: RemoteFunction): unknown {
  if (err instanceof RemoteFunctionError) return err;
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const where = `${target.functionName}${target.region ? ` (${target.region})` : ''}`;
  const message = (e?.message ?? '').split('\n')[0];
  if (/region is missing/i.test(message)) return new UserError('no AWS region: pass --region or set AWS_REGION');
  switch (e?.name) {
    case 'ResourceNotFoundException':
      return new UserError(`the admin function ${where} does not exist`);
    case 'AccessDeniedException':
    case 'AccessDenied':
    case 'UnrecognizedClientException':
    case 'InvalidSignatureException':
    case 'ExpiredTokenException':
      return new UserError(`not allowed to invoke ${where}: ${message}`);
    case 'CredentialsProviderError':
      return new UserError(`no AWS credentials: ${message}`);
  }
  if (e?.$metadata?.httpStatusCode === 403) return new UserError(`not allowed to invoke ${where}: ${message}`);
  return err;
}

/** What runCli needs to send a command to the admin function (only the process entry wires it in,
 *  so the admin function's own bundle never carries the AWS SDK). */
export interface RemoteTransport {
  resolve(args: RemoteArgs, env: NodeJS.ProcessEnv): Promise<RemoteFunction>;
  identity(target: RemoteFunction): Promise<string | undefined>;
  invoke(target: RemoteFunction, payload: AdminInvocation): Promise<AdminInvocationResult>;
}

export const lambdaTransport = (options: RemoteOptions = {}): RemoteTransport => ({
  resolve: (args, env) => resolveRemoteFunction(args, env, options),
  identity: (target) => callerIdentity(target, options),
  invoke: (target, payload) => invokeAdminFunction(target, payload, options),
});
