// Self-service two-factor authentication: enrolment confirmed by a TOTP code, ten single-use
// recovery codes (shown once, stored as SHA-256 digests), regeneration, and disabling. The
// current-password checks happen before these are called (domain/sign-in.ts).
import { randomBytes } from 'node:crypto';
import { withTransaction } from '../db/transaction';
import type { DbOrTrx } from '../db/schema';
import { recordAudit } from './audit';
import { conflict, invalid } from './errors';
import { sha256Hex } from './secrets';
import type { KeyRing } from './service-keys';
import type { MailSettings } from './mail/account-messages';
import { enqueueSecurityAlert } from './security-alerts';
import { verifyTotp } from './totp';
import { sealTotpSecret } from './totp-secrets';

export const RECOVERY_CODE_COUNT = 10;
export const INVALID_PIN = 'Invalid pin code.';

/** GitLab's format: 16 lowercase hex characters (64 random bits; online guessing is rate-limited). */
const newRecoveryCode = (): string => randomBytes(8).toString('hex');

/** What a person may type: any case, spaces or dashes between groups. */
export const normalizeRecoveryCode = (input: string): string => input.replace(/[\s-]+/g, '').toLowerCase();
export const looksLikeRecoveryCode = (input: string): boolean => /^[0-9a-f]{16}$/.test(normalizeRecoveryCode(input));

async function replaceRecoveryCodes(db: DbOrTrx, userId: number): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
  await db
    .insertInto('user_recovery_codes')
    .values(codes.map((code) => ({ user_id: userId, code_digest: sha256Hex(code) })))
    .execute();
  return codes;
}

/** The recovery codes of a user's first second factor (TOTP or WebAuthn), in its transaction. */
export const createFirstRecoveryCodes = (trx: DbOrTrx, userId: number): Promise<string[]> =>
  replaceRecoveryCodes(trx, userId);

/** A user left with no second factor keeps no recovery codes (they would be a password of their own). */
export async function dropRecoveryCodesWithoutSecondFactor(trx: DbOrTrx, userId: number): Promise<void> {
  await trx
    .deleteFrom('user_recovery_codes')
    .where('user_id', '=', userId)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('users')
            .select('id')
            .where('id', '=', userId)
            .where((u) => u.or([u('otp_secret', 'is not', null), u('webauthn_credential_count', '>', 0)])),
        ),
      ),
    )
    .execute();
}

export interface AuditContext {
  actor: string;
  ipAddress?: string;
  /** What the security alert needs (PUBLIC_URL, MAIL_FROM); every service and CLI caller passes it (tests may not). */
  mail?: MailSettings;
}

const auditOf = ({ actor, ipAddress }: AuditContext) => ({ actor, ipAddress });

/** The alert to the account's primary address, in the change's transaction. */
async function alert(
  trx: DbOrTrx,
  userId: number,
  kind: 'two_factor_disabled' | 'recovery_codes_regenerated',
  audit: AuditContext,
) {
  if (!audit.mail) return;
  const user = await trx
    .selectFrom('users')
    .select(['email', 'name', 'username'])
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
  await enqueueSecurityAlert(trx, user, { kind }, audit.mail);
}

/**
 * Enrol `secret` as the user's TOTP seed: the one way a seed reaches `users.otp_secret` (the account
 * page and `users set-2fa on` both come here), so it is always sealed under the service key ring
 * (AES-256-GCM, domain/totp-secrets.ts) and never stored in clear. `lastStep` is the step of the
 * confirming code (it cannot be replayed), null when none was typed. With `onlyIfNotEnrolled`, a
 * user who already has a seed keeps it and the answer is false.
 */
export async function storeTotpSecret(
  db: DbOrTrx,
  ring: KeyRing,
  userId: number,
  secret: string,
  { lastStep, onlyIfNotEnrolled }: { lastStep: number | null; onlyIfNotEnrolled: boolean },
): Promise<boolean> {
  let update = db
    .updateTable('users')
    .set({
      otp_secret: sealTotpSecret(ring, userId, secret),
      otp_last_step: lastStep,
      otp_enrolment_required: false,
      updated_at: new Date(),
    })
    .where('id', '=', userId);
  if (onlyIfNotEnrolled) update = update.where('otp_secret', 'is', null);
  return (await update.executeTakeFirst()).numUpdatedRows > 0n;
}

/**
 * Turn 2FA on with the secret the user's app was set up with, if `code` is a current TOTP code of
 * it. Returns the recovery codes (plaintext, to show once), none when a passkey or security key
 * already brought them. A user already enrolled is refused.
 * `ring` seals the secret at rest.
 */
export async function enableTwoFactor(
  db: DbOrTrx,
  ring: KeyRing,
  userId: number,
  secret: string,
  code: string,
  audit: AuditContext,
): Promise<string[]> {
  const step = verifyTotp(secret, code.trim(), null);
  if (step === undefined) throw invalid(INVALID_PIN);
  return withTransaction(db, async (trx) => {
    const stored = await storeTotpSecret(trx, ring, userId, secret, { lastStep: step, onlyIfNotEnrolled: true });
    if (!stored) throw conflict('Two-factor authentication is already enabled.');
    const { webauthn_credential_count: keys } = await trx
      .selectFrom('users')
      .select('webauthn_credential_count')
      .where('id', '=', userId)
      .executeTakeFirstOrThrow();
    const codes = keys > 0 ? [] : await replaceRecoveryCodes(trx, userId);
    await recordAudit(trx, { ...auditOf(audit), action: 'user.enable_2fa', targetType: 'user', targetId: userId });
    return codes;
  });
}

export async function regenerateRecoveryCodes(db: DbOrTrx, userId: number, audit: AuditContext): Promise<string[]> {
  return withTransaction(db, async (trx) => {
    const codes = await replaceRecoveryCodes(trx, userId);
    await alert(trx, userId, 'recovery_codes_regenerated', audit);
    await recordAudit(trx, {
      ...auditOf(audit),
      action: 'user.regenerate_recovery_codes',
      targetType: 'user',
      targetId: userId,
    });
    return codes;
  });
}

/** Every second factor goes: the TOTP secret, the recovery codes and every passkey and security key. */
export async function disableTwoFactor(db: DbOrTrx, userId: number, audit: AuditContext): Promise<void> {
  await withTransaction(db, async (trx) => {
    await trx.deleteFrom('webauthn_credentials').where('user_id', '=', userId).execute();
    await trx
      .updateTable('users')
      .set({ otp_secret: null, otp_last_step: null, updated_at: new Date() })
      .where('id', '=', userId)
      .execute();
    await trx.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
    await alert(trx, userId, 'two_factor_disabled', audit);
    await recordAudit(trx, { ...auditOf(audit), action: 'user.disable_2fa', targetType: 'user', targetId: userId });
  });
}

/** Use up one recovery code: true once per code (the conditional update is the replay guard). */
export async function consumeRecoveryCode(db: DbOrTrx, userId: number, input: string): Promise<boolean> {
  const row = await db
    .updateTable('user_recovery_codes')
    .set({ used_at: new Date() })
    .where('user_id', '=', userId)
    .where('code_digest', '=', sha256Hex(normalizeRecoveryCode(input)))
    .where('used_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function remainingRecoveryCodes(db: DbOrTrx, userId: number): Promise<number> {
  const row = await db
    .selectFrom('user_recovery_codes')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
