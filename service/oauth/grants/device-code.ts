// grant_type=urn:ietf:params:oauth:grant-type:device_code (RFC 8628 §3.4, §3.5). The device
// grant's row is locked for the poll, so of concurrent polls after approval exactly one gets the
// tokens and the others find it used (invalid_grant, as for a used authorization code).
// Order of the answers, as Doorkeeper's DeviceCodeRequest: unknown or another client's code →
// invalid_grant; expired → expired_token; denied → access_denied; polled sooner than the interval
// → slow_down (+5 s); not yet decided → authorization_pending; approved → the token response.
import {
  lockDeviceGrant,
  markDeviceGrantUsed,
  recordDevicePoll,
  type DeviceGrantRecord,
} from '../../domain/device-grants';
import { issueAccessToken } from '../../domain/oauth-tokens';
import { findUserById } from '../../domain/users';
import { AccessDenied, AuthorizationPending, ExpiredToken, InvalidGrant, InvalidRequest, SlowDown } from '../errors';
import { narrowedAudience } from '../../domain/resources';
import { InvalidTarget } from '../errors';
import type { Grant, GrantContext, GrantResult } from './types';

export const grantType = 'urn:ietf:params:oauth:grant-type:device_code';
export const parameters = ['device_code'] as const;

// RFC 8628 §3.4: public clients identify themselves by client_id; confidential ones authenticate.
export const clientAuthentication: Grant['clientAuthentication'] = 'required';

type Refusal =
  | 'invalid_grant'
  | 'expired_token'
  | 'access_denied'
  | 'slow_down'
  | 'authorization_pending'
  | 'invalid_target';

const REFUSALS: Record<Refusal, () => Error> = {
  invalid_grant: () => new InvalidGrant(),
  expired_token: () => new ExpiredToken(),
  access_denied: () => new AccessDenied(),
  slow_down: () => new SlowDown(),
  authorization_pending: () => new AuthorizationPending(),
  invalid_target: () => new InvalidTarget(),
};

const polledTooSoon = (row: DeviceGrantRecord, at: Date) =>
  row.last_polled_at !== null && at.getTime() - row.last_polled_at.getTime() < row.interval_seconds * 1000;

export async function handler({
  db,
  params,
  client,
  resources,
  receivedAt,
  signIdToken,
  dpopJkt,
}: GrantContext): Promise<GrantResult> {
  const deviceCode = params.device_code;
  if (!deviceCode) throw new InvalidRequest();
  const application = client!.application;
  // Return (not throw) refusals from the transaction: the poll's time and a widened interval must commit.
  const outcome = await db.transaction().execute(async (trx): Promise<GrantResult | Refusal> => {
    const row = await lockDeviceGrant(trx, deviceCode);
    if (!row || row.application_id !== application.id || row.status === 'used') return 'invalid_grant';
    if (row.expires_at.getTime() <= receivedAt.getTime()) return 'expired_token';
    if (row.status === 'denied') return 'access_denied';
    if (polledTooSoon(row, receivedAt)) {
      await recordDevicePoll(trx, row.id, receivedAt, true);
      return 'slow_down';
    }
    if (row.status === 'pending') {
      await recordDevicePoll(trx, row.id, receivedAt, false);
      return 'authorization_pending';
    }
    const user = await findUserById(trx, row.user_id!);
    if (user?.state !== 'active') return 'invalid_grant';
    // RFC 8707 §2.2: the token request may only narrow the device grant's resources (unspent if not).
    const audience = narrowedAudience(row.resources, resources);
    if (!audience) return 'invalid_target';
    await markDeviceGrantUsed(trx, row.id, receivedAt);
    const issued = await issueAccessToken(trx, {
      applicationId: application.id,
      userId: row.user_id!,
      scopes: row.scopes,
      withRefreshToken: true,
      dpopJkt,
      resources: row.resources,
      audience,
    });
    if (!row.scopes.includes('openid')) return issued;
    // The person authenticated in the browser session that approved the code (grants decided before
    // that was kept: the user's latest sign-in); no nonce (RFC 8628 has none).
    const authTime = row.auth_time ?? user.current_sign_in_at ?? receivedAt;
    const idToken = await signIdToken(trx, {
      clientId: application.uid,
      user,
      authTime,
      amr: row.amr ?? undefined,
      scopes: issued.scopes,
    });
    return { ...issued, idToken };
  });
  if (typeof outcome === 'string') throw REFUSALS[outcome]();
  return outcome;
}
