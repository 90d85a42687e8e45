// The code an authenticator app shows now (RFC 6238): the domain's own HOTP at the current step.
import { hotp, timeStep } from '../../service/domain/totp';

export const totp = (secret: string, now = Date.now()): string => hotp(secret, timeStep(now));
