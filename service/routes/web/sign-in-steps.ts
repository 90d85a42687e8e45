// What the sign-in steps share (password, TOTP or recovery code, passkey or security key): the
// second step's window after the password, and the one way a sign-in completes (the session with
// its auth_time and amr, the sign-in recorded, back to where the person was going).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../../db/schema';
import type { WebSession } from '../../domain/sessions';
import { recordSignIn } from '../../domain/sign-in';
import { DEFAULT_AFTER_SIGN_IN, safeReturnTo } from '../../pages/current-user';
import { redirect } from '../../pages/layout';

/** How long the second step may follow the password step. */
const SECOND_STEP_SECONDS = 300;

/** The user whose password this session accepted, while the second step is still open. */
export function pendingSecondStep(session: WebSession): number | undefined {
  const { otp_user_id: userId, otp_started_at: startedAt } = session.data;
  if (userId === undefined || startedAt === undefined) return undefined;
  return Date.now() - startedAt < SECOND_STEP_SECONDS * 1000 ? userId : undefined;
}

export async function completeSignIn(
  app: FastifyInstance,
  db: Db,
  request: FastifyRequest,
  reply: FastifyReply,
  session: WebSession,
  userId: number,
  amr: string[],
) {
  const returnTo = safeReturnTo(session.data.return_to) ?? DEFAULT_AFTER_SIGN_IN;
  // auth_time (OIDC Core §2) is the moment the credentials were accepted; amr how (RFC 8176).
  await app.sessions.signIn(request, reply, userId, { auth_time: Date.now(), amr });
  await recordSignIn(db, userId);
  return redirect(reply, returnTo);
}
