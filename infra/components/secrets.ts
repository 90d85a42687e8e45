// Secrets: the service's session/CSRF key ring and its OpenID Connect signing keys. Created empty
// here and seeded by the migration function on the first deploy, so no value (above all no private
// key) ever passes through Pulumi state.
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';

export interface SecretsArgs {
  namePrefix: string;
  /** 0 deletes at once (throwaway stacks), else 7–30 days to restore. */
  recoveryWindowDays: number;
  tags: Record<string, string>;
}

export class Secrets extends pulumi.ComponentResource {
  readonly sessionKeysSecretArn: pulumi.Output<string>;
  readonly signingKeysSecretArn: pulumi.Output<string>;

  constructor(name: string, args: SecretsArgs, opts?: pulumi.ComponentResourceOptions) {
    super('lanyard:infra:Secrets', name, {}, opts);
    const keyRing = new aws.secretsmanager.Secret(
      `${name}-session-keys`,
      {
        namePrefix: `${args.namePrefix}/session-keys-`,
        description:
          'Lanyard session/CSRF signing key ring ({"keys":[…]}); seeded by the migration function, rotated by `lanyard-admin secrets rotate session-key`',
        recoveryWindowInDays: args.recoveryWindowDays,
        tags: args.tags,
      },
      { parent: this },
    );
    const signingKeys = new aws.secretsmanager.Secret(
      `${name}-signing-keys`,
      {
        namePrefix: `${args.namePrefix}/signing-keys-`,
        description:
          'Lanyard OpenID Connect RS256 signing keys ({"keys":[…]}); first key written by the migration function, rotated by `lanyard-admin secrets rotate signing-key`',
        recoveryWindowInDays: args.recoveryWindowDays,
        tags: args.tags,
      },
      { parent: this },
    );
    this.sessionKeysSecretArn = keyRing.arn;
    this.signingKeysSecretArn = signingKeys.arn;
    this.registerOutputs({
      sessionKeysSecretArn: this.sessionKeysSecretArn,
      signingKeysSecretArn: this.signingKeysSecretArn,
    });
  }
}
