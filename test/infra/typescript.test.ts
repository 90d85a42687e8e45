// infra/ compiles the way `pulumi up` compiles it: the program loaded through Pulumi's own ts-node
// registration (type-checking on, the root tsconfig.json) under mocks — see pulumi-loader.cjs.
// (`npm test` type-checks infra/ with the root options once, before the tests: no second tsc here.)
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');

describe("infra/ under the TypeScript settings of Pulumi's loader", () => {
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
