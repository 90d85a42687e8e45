// HTTP-facing errors. The root error handler (error-handler.ts) serialises each kind in one place.

/** A GitLab-style API error: the body is sent as is, e.g. {"message":"401 Unauthorized"}. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(
      typeof body.message === 'string'
        ? body.message
        : typeof body.error === 'string'
          ? body.error
          : `HTTP ${statusCode}`,
    );
    this.name = 'ApiError';
  }
}

export const unauthorized = () => new ApiError(401, { message: '401 Unauthorized' });
export const forbidden = () => new ApiError(403, { message: '403 Forbidden' });
export const apiNotFound = (what?: string) =>
  new ApiError(404, { message: what ? `404 ${what} Not Found` : '404 Not Found' });
