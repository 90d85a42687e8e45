// The event arguments `notify recipients` and `notify explain` share (--project, --event, --author,
// --participant, --mentioned): one set of options and one translation into the domain's request.
import type { Argv } from 'yargs';
import type { DbOrTrx } from '../../service/db/schema';
import { requestFromNames } from '../../service/domain/notifications/recipients';
import { NOTIFICATION_EVENTS } from '../../service/domain/notifications/settings';

export interface NotifyEventArgs {
  project: string;
  event: string;
  author?: string;
  participant?: string[];
  mentioned?: string[];
}

export const notifyEventOptions = (y: Argv): Argv =>
  y
    .option('project', { type: 'string', demandOption: true, describe: "The project's path with namespace" })
    .option('event', { type: 'string', demandOption: true, describe: NOTIFICATION_EVENTS.join(' | ') })
    .option('author', { type: 'string', describe: 'Who acted (never notified of their own activity)' })
    .option('participant', { type: 'string', array: true, describe: 'A participant (repeatable)' })
    .option('mentioned', { type: 'string', array: true, describe: 'A mentioned user (repeatable)' });

/** The project and event named on the command line, validated by the domain (unknown names are errors). */
export const notifyEventRequest = (db: DbOrTrx, args: NotifyEventArgs) =>
  requestFromNames(db, {
    project: args.project,
    event: args.event,
    author: args.author,
    participants: args.participant,
    mentioned: args.mentioned,
  });
