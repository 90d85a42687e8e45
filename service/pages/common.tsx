// Pages shared by several route groups: the rejected-CSRF page and the generic error page.
import type { FastifyReply } from 'fastify';
import * as React from './jsx';
import { Layout, sendPage } from './layout';

export function csrfRejected(reply: FastifyReply) {
  return sendPage(
    reply,
    422,
    <Layout title="The change you requested was rejected" variant="card">
      <p class="flash flash-alert" role="alert">
        Invalid or missing authenticity token. Go back, reload the page and try again.
      </p>
    </Layout>,
  );
}

/** An error the user cannot fix by retrying the form (an authorization request's client error). */
export function errorPage(reply: FastifyReply, status: number, error: string, description: string) {
  return sendPage(
    reply,
    status,
    <Layout title="An error has occurred" variant="card">
      <p class="flash flash-alert" role="alert">
        <strong id="error-code">{error}</strong>
      </p>
      <p id="error-description">{description}</p>
    </Layout>,
  );
}
