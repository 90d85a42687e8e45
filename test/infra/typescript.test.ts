// infra/ compiles the way `pulumi up` compiles it: tsc on infra/ with the root options (the ones
// Pulumi's loader merges), and the program actually loaded through Pulumi's own ts-node
// registration (type-checking on) under mocks — see pulumi-loader.cjs.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');

describe("infra/ under the TypeScript settings of Pulumi's loader", () => {
  it('passes tsc -p infra/tsconfig.json', async () => {
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const { stdout } = await run(process.execPath, [tsc, '-p', 'infra/tsconfig.json'], { cwd: ROOT }).catch((e) => {
      throw new Error(`tsc failed:\n${e.stdout}${e.stderr}`);
    });
    expect(stdout).toBe('');
  }, 120_000);

  it("loads Pulumi.yaml's main through Pulumi's ts-node registration and produces the stack outputs", async () => {
    const { stdout } = await run(process.execPath, [path.join(__dirname, 'pulumi-loader.cjs')], { cwd: ROOT }).catch(
      (e) => {
        throw new Error(`the Pulumi loader failed:\n${e.stderr}`);
      },
    );
    const result = JSON.parse(stdout);
    expect(result.typescript).toBe('6.0.3');
    expect(result.outputs).toMatchObject({
      adminFunctionName: 'lanyard-loader-check-admin',
      databaseSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-x',
    });
    expect(result.resources).toBeGreaterThan(40);
  }, 120_000);
});
