// `secrets rotate session-key` in a deployed stack: the key ring lives in a Secrets Manager secret
// (SESSION_KEYS_SECRET_ARN) that the API function reads, so rotate it there, not in the database.
import type { AdminServices } from '../command';
import type { SecretStore } from '../../service/aws/secret-store';
import { rotateKeyRingSecret } from '../../service/aws/session-key-ring';
import { recordAudit } from '../../service/domain/audit';
import { resealTotpSecrets } from '../../service/domain/totp-secrets';

export function secretSessionKeyService(store: SecretStore, arn: string): AdminServices['rotateSessionKey'] {
  return async (db, actor) => {
    const { keyId, ring } = await rotateKeyRingSecret(store, arn);
    // TOTP secrets follow the signing key (the old key keeps opening them until they are resealed).
    const resealed = await resealTotpSecrets(db, ring);
    await recordAudit(db, {
      actor,
      action: 'service_key.rotate',
      targetType: 'service_key',
      targetId: keyId,
      details: { purpose: 'session', store: 'secretsmanager', resealed_totp_secrets: resealed },
    });
    return { rotated: true };
  };
}
