// `secrets rotate signing-key` services: locally the 0600 key file under LANYARD_HOME; in a
// deployed stack the Secrets Manager secret (SIGNING_KEYS_SECRET_ARN) that the API function reads.
import type { SecretStore } from '../../service/aws/secret-store';
import { rotateSigningKeySecret } from '../../service/aws/signing-key-secret';
import { recordAudit } from '../../service/domain/audit';
import type { SigningKeyPolicy } from '../../service/domain/signing-keys';
import { rotateSigningKeyFile } from '../../service/local/signing-key-file';
import type { AdminServices } from '../command';

const audited =
  (rotate: () => Promise<{ kid: string }>, store: string): AdminServices['rotateSigningKey'] =>
  async (db, actor) => {
    const { kid } = await rotate();
    await recordAudit(db, {
      actor,
      action: 'signing_key.rotate',
      targetType: 'signing_key',
      targetId: kid,
      details: { store },
    });
    return { rotated: true, kid };
  };

export const fileSigningKeyService = (home: string, policy: SigningKeyPolicy) =>
  audited(() => rotateSigningKeyFile(home, policy), 'file');

export const secretSigningKeyService = (store: SecretStore, arn: string, policy: SigningKeyPolicy) =>
  audited(() => rotateSigningKeySecret(store, arn, policy), 'secretsmanager');
