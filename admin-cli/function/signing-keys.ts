// `secrets rotate signing-key` services: locally the 0600 key file under LANYARD_HOME; in a
// deployed stack the Secrets Manager secret (SIGNING_KEYS_SECRET_ARN) that the API function reads.
import type { SecretStore } from '../../service/aws/secret-store';
import { rotateSigningKeySecret } from '../../service/aws/signing-key-secret';
import { recordAudit } from '../../service/domain/audit';
import {
  defaultActivateAfterSeconds,
  type SigningKeyPolicy,
  type SigningKeyRotation,
} from '../../service/domain/signing-keys';
import { rotateSigningKeyFile } from '../../service/local/signing-key-file';
import type { AdminServices } from '../command';

const audited =
  (
    rotate: (activateAfterSeconds: number) => Promise<SigningKeyRotation>,
    store: string,
    policy: SigningKeyPolicy,
  ): AdminServices['rotateSigningKey'] =>
  async (db, actor, activateAfterSeconds) => {
    const { kid, step, activatesAt } = await rotate(activateAfterSeconds ?? defaultActivateAfterSeconds(policy));
    await recordAudit(db, {
      actor,
      action: step === 'staged' ? 'signing_key.stage' : 'signing_key.rotate',
      targetType: 'signing_key',
      targetId: kid,
      details: { store, activates_at: activatesAt },
    });
    return { rotated: true, kid, step, activates_at: activatesAt };
  };

export const fileSigningKeyService = (home: string, policy: SigningKeyPolicy) =>
  audited((after) => rotateSigningKeyFile(home, policy, after), 'file', policy);

export const secretSigningKeyService = (store: SecretStore, arn: string, policy: SigningKeyPolicy) =>
  audited((after) => rotateSigningKeySecret(store, arn, policy, after), 'secretsmanager', policy);
