// One back-channel logout POST (Back-Channel Logout 1.0 §2.5): `logout_token=…` as a form body,
// redirects never followed (the token goes only to the registered URI), a short timeout. Its own
// module without imports: the deployed mail sender function (no database) bundles only this.
/** The relying party's status, or an error that never reached one (timeout, refused connection). */
export type PostAnswer = { status: number } | { error: string };

/** A relying party that may answer differently next time: retried. Any other non-2xx is final. */
export const retryableStatus = (status: number) =>
  status === 408 || status === 429 || status >= 500 || (status >= 300 && status < 400);

export async function postLogoutToken(uri: string, body: string, timeoutMs = 5000): Promise<PostAnswer> {
  try {
    const response = await fetch(uri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'cache-control': 'no-store' },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel().catch(() => undefined);
    return { status: response.status };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return { error: `no answer within ${timeoutMs} ms` };
    return { error: e.cause?.code ?? e.message };
  }
}
