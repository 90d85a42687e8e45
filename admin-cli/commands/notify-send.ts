// `notify send`: post a notification event on a project from the command line, through the same
// intake as POST /api/v4/projects/:id/notification_events (one transaction, one e-mail per
// recipient, idempotent per key). The sender delivers the messages as it does every other one.
import { randomUUID } from 'node:crypto';
import { eventFromNames, takeNotificationEvent } from '../../service/domain/notifications/events';
import { NOTIFICATION_EVENTS } from '../../service/domain/notifications/settings';
import { defineCommand } from '../command';
import { recordOf } from '../output';

interface Args {
  project: string;
  event: string;
  targetType: string;
  targetId: string;
  title: string;
  url: string;
  author?: string;
  participants?: string[];
  mentioned?: string[];
  summary?: string;
  idempotencyKey?: string;
}

export default defineCommand<Args>({
  path: ['notify', 'send'],
  describe: 'Post a notification event on a project: its recipients are e-mailed',
  examples: [
    [
      'notify send --project acme/api --event new_issue --target-type issue --target-id 12 --title "Crash on login" --url https://code.example.org/acme/api/-/issues/12 --author alice --participants alice bob',
      'e-mail everyone who should hear of issue #12',
    ],
    [
      'notify send --project acme/api --event failed_pipeline --target-type pipeline --target-id 77 --title main --url https://ci.example.org/77 --idempotency-key ci-77 --json',
      'a failed pipeline, safe to repeat (same key, same answer, no second e-mail)',
    ],
  ],
  options: (y) =>
    y
      .option('project', { type: 'string', demandOption: true, describe: "The project's path with namespace" })
      .option('event', { type: 'string', demandOption: true, describe: NOTIFICATION_EVENTS.join(' | ') })
      .option('target-type', {
        type: 'string',
        demandOption: true,
        describe: 'issue | merge_request | pipeline | release | project',
      })
      .option('target-id', {
        type: 'string',
        demandOption: true,
        describe: 'The iid of an issue or merge request, else the id',
      })
      .option('title', { type: 'string', demandOption: true, describe: "The target's title (one line)" })
      .option('url', { type: 'string', demandOption: true, describe: 'Where the target is shown (http or https)' })
      .option('author', { type: 'string', describe: 'Who acted (never notified of their own activity)' })
      .option('participants', { type: 'string', array: true, describe: 'Usernames taking part' })
      .option('mentioned', { type: 'string', array: true, describe: 'Usernames mentioned' })
      .option('summary', { type: 'string', describe: 'Text quoted in the e-mail' })
      .option('idempotency-key', { type: 'string', describe: 'Repeat-safe key (default: a new one each run)' }),
  async run(args, { db, actor, mailSettings, services }) {
    const { target, input } = await eventFromNames(db, {
      project: args.project,
      event: args.event,
      target: { type: args.targetType, id: args.targetId, title: args.title, url: args.url },
      author: args.author,
      participants: args.participants,
      mentioned: args.mentioned,
      summary: args.summary,
      idempotencyKey: args.idempotencyKey ?? `cli-${randomUUID()}`,
    });
    const receipt = await takeNotificationEvent(db, mailSettings(), await services.keyRing(db), actor, target, input);
    return {
      json: receipt,
      text: recordOf({
        id: receipt.id,
        event: receipt.event,
        recipients: receipt.recipient_count,
        idempotency_key: receipt.idempotency_key,
        next: `lanyard-admin notify events show ${receipt.id}`,
      }),
    };
  },
});
