// `secrets rotate session-key` in a deployed stack: the key ring lives in a Secrets Manager secret
// (SESSION_KEYS_SECRET_ARN) that the API function reads, so rotate it there, not in the database.
import type { AdminServices } from '../command';
import type { SecretStore } from '../../service/aws/secret-store';
import { rotateKeyRingSecret } from '../../service/aws/session-key-ring';
import { recordAudit } from '../../service/domain/audit';

export function secretSessionKeyService(store: SecretStore, arn: string): AdminServices['rotateSessionKey'] {
  return async (db, actor) => {
    const { keyId } = await rotateKeyRingSecret(store, arn);
    await recordAudit(db, {
      actor,
      action: 'service_key.rotate',
      targetType: 'service_key',
      targetId: keyId,
      details: { purpose: 'session', store: 'secretsmanager' },
    });
    return { rotated: true };
  };
}
