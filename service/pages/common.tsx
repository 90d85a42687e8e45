// Pages shared by several route groups: the rejected-form page and the authorization errors.
import type { FastifyReply } from 'fastify';
import { type BackLink, backToReferer, sendErrorPage } from './error-page';

/** A form whose authenticity token is missing, wrong or from an expired session (422, as GitLab). */
export function csrfRejected(reply: FastifyReply) {
  return sendErrorPage(reply, {
    status: 422,
    title: 'The change you requested was rejected',
    message:
      'Nothing was changed: the form had expired, or your session ended while the page was open. Go back, reload the page and try again.',
    code: { error: 'invalid_authenticity_token', description: 'Invalid or missing authenticity token.' },
    back: backToReferer(reply.request),
  });
}

/** The words of an authorization error a person cannot fix by retrying; the code comes second. */
const ERROR_WORDS: Record<string, { title: string; message: string }> = {
  invalid_client: {
    title: 'Unknown application',
    message:
      'The application that sent you here is not registered with Lanyard, so you cannot sign in to it. Go back to the site you came from and tell its owner.',
  },
  invalid_redirect_uri: {
    title: 'This application cannot send you back',
    message:
      'The application asked Lanyard to send you to an address it has not registered. For your safety you will not be sent there. Tell the application’s owner.',
  },
};

const GENERIC_WORDS = {
  title: 'This request could not be completed',
  message: 'The application that sent you here made a request Lanyard cannot accept. Go back to it and try again.',
};

/**
 * An error the user cannot fix by retrying the form (an authorization or logout request's client
 * error): the words first, then the OAuth code and description. `back` only when the address it
 * leads to is one the application registered (a safe redirect); else the start page.
 */
export function errorPage(reply: FastifyReply, status: number, error: string, description: string, back?: BackLink) {
  const words = ERROR_WORDS[error] ?? GENERIC_WORDS;
  return sendErrorPage(reply, {
    status,
    title: words.title,
    message: words.message,
    code: { error, description },
    back,
  });
}
