// /-/unsubscribe/:token — the List-Unsubscribe URL of notification e-mails (RFC 8058). No session,
// no cookie and no CSRF token are involved: the signed token in the path is the whole authority
// (domain/notifications/unsubscribe.ts).
//   GET   changes nothing (link scanners and previews fetch it): the project and a button.
//   POST  `List-Unsubscribe=One-Click` (a mail client, RFC 8058 §3.2, or that button): the level for
//         the project becomes `disabled`; answered 200 with the page itself — RFC 8058 §3.1 forbids
//         a redirect here — whose Undo form carries a signed undo token. Posted again (the page
//         reloaded, a second click) it changes nothing and offers no Undo: the level is already
//         `disabled`, and the first answer's Undo still restores the level before it.
//   POST  /-/unsubscribe/undo: restores the previous level while it is still `disabled`.
// The one-click POST takes no Origin check: a mail client may post from anywhere, and knowing the
// token is what counts. The undo form is a browser's own: it gets the form routes' Origin rule.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import type { NotificationLevel } from '../../db/schema';
import {
  readUnsubscribeToken,
  UNSUBSCRIBE_PATH,
  type UnsubscribeSubject,
  undoUnsubscribe,
  unsubscribe,
} from '../../domain/notifications/unsubscribe';
import { crossOrigin } from '../../http/form-body';
import { sendErrorPage } from '../../pages/error-page';
import { Button } from '../../pages/components';
import * as React from '../../pages/jsx';
import { Layout, sendPage } from '../../pages/layout';

const UNDO_PATH = `${UNSUBSCRIBE_PATH}/undo`;
const SETTINGS_PATH = '/-/profile/notifications';
const ONE_CLICK = 'One-Click';

const LEVEL_WORDS: Record<NotificationLevel, string> = {
  global: 'Global (your default)',
  watch: 'Watch',
  participating: 'Participate',
  mention: 'On mention',
  disabled: 'Disabled',
  custom: 'Custom',
};

const tokenParams = {
  params: {
    type: 'object',
    properties: { token: { type: 'string', maxLength: 200 } },
    required: ['token'],
  },
} as const;
const oneClickBody = {
  type: 'object',
  properties: { 'List-Unsubscribe': { type: 'string', maxLength: 100 } },
} as const;
const undoBody = { type: 'object', properties: { undo_token: { type: 'string', maxLength: 200 } } } as const;

/** RFC 8058 §3.2 allows multipart/form-data as well: the one field, read from the part. */
function oneClickFromMultipart(body: string): { 'List-Unsubscribe'?: string } {
  const m = /content-disposition:\s*form-data;\s*name="?List-Unsubscribe"?\s*\r?\n\r?\n([^\r\n]*)/i.exec(body);
  return m ? { 'List-Unsubscribe': m[1] } : {};
}

function refusedPage(reply: FastifyReply, reason: 'invalid' | 'expired' | 'not_found') {
  const expired = reason === 'expired';
  return sendPage(
    reply,
    expired ? 410 : 404,
    <Layout title={expired ? 'Unsubscribe link expired' : 'Unsubscribe link not valid'} variant="card">
      <p class="flash flash-alert" role="alert" id="flash-alert">
        {expired
          ? 'This unsubscribe link has expired. Nothing was changed.'
          : 'This unsubscribe link is not valid. Nothing was changed.'}
      </p>
      <p>
        You can choose which e-mails you get on your <a href={SETTINGS_PATH}>notification settings</a> page.
      </p>
    </Layout>,
  );
}

function ProjectLine({ subject }: { subject: UnsubscribeSubject }) {
  return (
    <p>
      Project <strong id="project-name">{subject.project.name}</strong>{' '}
      <span class="muted">({subject.project.pathWithNamespace})</span>, e-mails to{' '}
      <strong>{subject.user.username}</strong>.
    </p>
  );
}

export async function unsubscribeRoutes(app: FastifyInstance, _context: AppContext) {
  const { db } = _context;
  const ring = () => app.sessions.keyRing().load();

  app.get<{ Params: { token: string } }>(
    `${UNSUBSCRIBE_PATH}/:token`,
    { schema: tokenParams },
    async (request, reply) => {
      const read = await readUnsubscribeToken(db, await ring(), request.params.token);
      if (!read.ok) return refusedPage(reply, read.reason);
      const already = read.level === 'disabled';
      return sendPage(
        reply,
        200,
        <Layout title="Unsubscribe from notification e-mails" variant="card">
          <ProjectLine subject={read} />
          {already ? (
            <p id="current-level">You already get no notification e-mails about this project.</p>
          ) : (
            <p id="current-level">Your notification level for this project: {LEVEL_WORDS[read.level]}.</p>
          )}
          <form method="post" action={`${UNSUBSCRIBE_PATH}/${request.params.token}`}>
            <input type="hidden" name="List-Unsubscribe" value={ONE_CLICK} />
            <div class="actions">
              <Button variant="danger">Unsubscribe</Button>
            </div>
          </form>
          <p class="muted">
            This sets the project's notification level to Disabled. Other projects are not affected; manage everything
            on your <a href={SETTINGS_PATH}>notification settings</a> page.
          </p>
        </Layout>,
      );
    },
  );

  await app.register(async (scope) => {
    scope.addContentTypeParser('multipart/form-data', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_r, body, done) =>
      done(null, oneClickFromMultipart(String(body))),
    );
    scope.post<{ Params: { token: string }; Body: { 'List-Unsubscribe'?: string } }>(
      `${UNSUBSCRIBE_PATH}/:token`,
      { schema: { ...tokenParams, body: oneClickBody }, attachValidation: true },
      async (request, reply) => {
        if (request.validationError?.validationContext === 'params') throw request.validationError;
        const body = (request.body ?? {}) as Record<string, unknown>;
        if (request.validationError || body['List-Unsubscribe'] !== ONE_CLICK) {
          return sendErrorPage(reply, {
            status: 400,
            title: 'Unsubscribe request not complete',
            message:
              'Nothing was changed. Open the unsubscribe link in the e-mail again and select Unsubscribe. (Mail programs send List-Unsubscribe=One-Click.)',
          });
        }
        const done = await unsubscribe(db, await ring(), request.params.token, request.ip);
        if (!done.ok) return refusedPage(reply, done.reason);
        if (done.undoToken === null)
          return sendPage(
            reply,
            200,
            <Layout title="Already unsubscribed" variant="card">
              <p class="flash flash-notice" role="status" id="flash-notice">
                You already get no notification e-mails about {done.project.pathWithNamespace}. Nothing was changed.
              </p>
              <ProjectLine subject={done} />
              <p>
                To get them again, choose a level on your <a href={SETTINGS_PATH}>notification settings</a> page.
              </p>
            </Layout>,
          );
        return sendPage(
          reply,
          200,
          <Layout title="Unsubscribed" variant="card">
            <p class="flash flash-notice" role="status" id="flash-notice">
              You will no longer get notification e-mails about {done.project.pathWithNamespace}.
            </p>
            <ProjectLine subject={done} />
            <form method="post" action={UNDO_PATH}>
              <input type="hidden" name="undo_token" value={done.undoToken} />
              <p>Changed your mind? Undo restores your previous level: {LEVEL_WORDS[done.previousLevel]}.</p>
              <div class="actions">
                <Button variant="secondary">Undo</Button>
              </div>
            </form>
          </Layout>,
        );
      },
    );
  });

  app.post<{ Body: { undo_token?: string } }>(
    UNDO_PATH,
    { schema: { body: undoBody }, attachValidation: true },
    async (request: FastifyRequest<{ Body: { undo_token?: string } }>, reply) => {
      if (crossOrigin(request))
        return sendErrorPage(reply, {
          status: 403,
          title: 'Forbidden',
          message: 'This form was sent from another site.',
        });
      const token = request.validationError ? '' : (request.body?.undo_token ?? '');
      const done = await undoUnsubscribe(db, await ring(), token, request.ip);
      if (!done.ok) return refusedPage(reply, done.reason);
      return sendPage(
        reply,
        done.restored ? 200 : 409,
        <Layout title={done.restored ? 'Notifications restored' : 'Nothing to undo'} variant="card">
          <p class={`flash ${done.restored ? 'flash-notice' : 'flash-alert'}`} role="status" id="flash-notice">
            {done.restored
              ? `Your notification level for ${done.project.pathWithNamespace} is ${LEVEL_WORDS[done.level]} again.`
              : `Your notification level for ${done.project.pathWithNamespace} was changed since (it is ${LEVEL_WORDS[done.level]}); it was left as it is.`}
          </p>
          <p>
            Manage all your e-mail on your <a href={SETTINGS_PATH}>notification settings</a> page.
          </p>
        </Layout>,
      );
    },
  );
}
