// The mail events function (handler index.recordMailEvents of the maintenance bundle, in the VPC
// with the database): the SES configuration set publishes Bounce and Complaint events to an SNS
// topic, SNS invokes this function, and each hard bounce (bounceType Permanent) or complaint
// suppresses the recipient's address (domain/mail/suppressions.ts). Transient bounces, deliveries
// and anything else are ignored; SES may add fields (its docs say so), so only the ones used are
// read. Both shapes are accepted: event publishing (`eventType`) and identity feedback
// notifications (`notificationType`). A malformed message is logged and skipped (a retry cannot
// fix it); a database failure throws, so Lambda retries the asynchronous invocation.
// Each new suppression is one JSON log line `{"msg":"mail: suppressed",…}`: the stack's metric
// filter counts them (infra/components/mail.ts).
import type { Db } from '../db/schema';
import { recordSuppression, type SuppressionReason } from '../domain/mail/suppressions';

export interface SnsEvent {
  Records: Array<{ EventSource?: string; Sns: { MessageId: string; Message: string } }>;
}

export interface MailEventsReport {
  /** Addresses newly suppressed. */
  suppressed: number;
  /** Recipients of hard bounces and complaints that were already suppressed. */
  known: number;
  /** Notifications that suppress nothing (transient bounces, deliveries, malformed ones). */
  ignored: number;
}

type Log = (level: 'info' | 'warn', entry: Record<string, unknown>) => void;

interface Finding {
  address: string;
  reason: SuppressionReason;
  detail: string;
}

/** The fields of an SES notification this function reads (SES may add others). */
interface SesNotification {
  eventType?: unknown;
  notificationType?: unknown;
  bounce?: { bounceType?: unknown; bounceSubType?: unknown; bouncedRecipients?: unknown };
  complaint?: { complaintFeedbackType?: unknown; complaintSubType?: unknown; complainedRecipients?: unknown };
}

interface Recipient {
  emailAddress: string;
  diagnosticCode?: unknown;
  status?: unknown;
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');
const recipients = (list: unknown): Recipient[] =>
  Array.isArray(list)
    ? list.filter((r): r is Recipient => typeof (r as Partial<Recipient> | null)?.emailAddress === 'string')
    : [];

/** The recipients an SES notification suppresses, or undefined when it suppresses nothing. */
export function suppressionsOf(notification: unknown): Finding[] | undefined {
  if (!notification || typeof notification !== 'object') return undefined;
  const n = notification as SesNotification;
  const type = n.eventType ?? n.notificationType;
  if (type === 'Bounce' && n.bounce?.bounceType === 'Permanent') {
    const subType = text(n.bounce.bounceSubType);
    return recipients(n.bounce.bouncedRecipients).map((r) => ({
      address: r.emailAddress,
      reason: 'bounce' as const,
      detail: [subType, text(r.diagnosticCode) || text(r.status)].filter(Boolean).join(': '),
    }));
  }
  if (type === 'Complaint' && n.complaint) {
    const feedback = text(n.complaint.complaintFeedbackType) || text(n.complaint.complaintSubType);
    return recipients(n.complaint.complainedRecipients).map((r) => ({
      address: r.emailAddress,
      reason: 'complaint' as const,
      detail: feedback,
    }));
  }
  return undefined;
}

export function createMailEventsHandler(options: { db: Db; log: Log }) {
  return async (event: SnsEvent): Promise<MailEventsReport> => {
    const report: MailEventsReport = { suppressed: 0, known: 0, ignored: 0 };
    for (const record of event?.Records ?? []) {
      let findings: Finding[] | undefined;
      try {
        findings = suppressionsOf(JSON.parse(record.Sns.Message));
      } catch {
        findings = undefined;
      }
      if (!findings?.length) {
        report.ignored++;
        continue;
      }
      for (const f of findings) {
        let created: boolean;
        try {
          created = await recordSuppression(options.db, { ...f, source: 'ses' });
        } catch (err) {
          // Not an address (recordSuppression refuses it): nothing to retry.
          if ((err as { kind?: string }).kind !== 'invalid') throw err;
          options.log('warn', { msg: 'mail: not an address, ignored', snsMessageId: record.Sns.MessageId });
          report.ignored++;
          continue;
        }
        if (created) {
          report.suppressed++;
          // The address is personal data: the log names the reason and the SNS message, not the address.
          options.log('info', {
            msg: 'mail: suppressed',
            reason: f.reason,
            source: 'ses',
            snsMessageId: record.Sns.MessageId,
          });
        } else report.known++;
      }
    }
    return report;
  };
}
