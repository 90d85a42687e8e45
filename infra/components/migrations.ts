// Migrations: the migration function, invoked during `pulumi up` by aws.lambda.Invocation. The
// invocation is keyed on the hash of the migration files, so it re-runs exactly when a migration
// is added or changed; a migration that throws fails the invocation and the deploy, before the
// API function (which depends on it) changes. Reserved concurrency 1: never two at once.
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import { createServiceFunction, type FunctionArgs, functionArgs } from './service-function';

export interface MigrationsArgs extends FunctionArgs {
  /** hashMigrations(migrations/). */
  migrationsHash: string;
  /** The key ring secret, seeded on the first deploy. */
  writeSecretArns: pulumi.Input<string>[];
  /** The database must exist (and accept connections) before the invocation. */
  dependsOn?: pulumi.Input<pulumi.Resource>[];
}

export class Migrations extends pulumi.ComponentResource {
  readonly functionName: pulumi.Output<string>;
  /** The invocation: depend on it to run after the schema is current. */
  readonly invocation: aws.lambda.Invocation;
  /** The function's answer: {"applied":[…],"pending":[],…}. */
  readonly result: pulumi.Output<string>;

  constructor(name: string, args: MigrationsArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Migrations', name, {}, opts);
    const { fn } = createServiceFunction(
      name,
      {
        ...functionArgs(args),
        description: 'Lanyard schema migrations (invoked by the deploy)',
        memoryMb: 512,
        timeoutSeconds: 300,
        reservedConcurrency: 1,
      },
      this,
    );

    this.invocation = new aws.lambda.Invocation(
      `${name}-run`,
      {
        functionName: fn.name,
        input: JSON.stringify({ action: 'migrate' }),
        triggers: { migrations: args.migrationsHash },
      },
      { parent: this, dependsOn: args.dependsOn },
    );

    this.functionName = fn.name;
    this.result = this.invocation.result;
    this.registerOutputs({ functionName: this.functionName, result: this.result });
  }
}
