// The command table: every command module, and the descriptions of the words that group them.
// cli.ts mounts this table on yargs; nothing else decides which commands exist.
import type { AdminCommand } from '../command';
import auditList from './audit-list';
import appsDelete from './apps-delete';
import appsList from './apps-list';
import appsRegister from './apps-register';
import appsRotateSecret from './apps-rotate-secret';
import appsShow from './apps-show';
import appsUpdate from './apps-update';
import dbMigrate from './db-migrate';
import dbPrune from './db-prune';
import dbStatus from './db-status';
import groupsCreate from './groups-create';
import groupsSetVisibility from './groups-set-visibility';
import logoutDeliveriesList from './logout-deliveries-list';
import logoutDeliveriesRetry from './logout-deliveries-retry';
import mailList from './mail-list';
import mailRetry from './mail-retry';
import mailShow from './mail-show';
import mailSuppressionsList from './mail-suppressions-list';
import mailSuppressionsRemove from './mail-suppressions-remove';
import mailTest from './mail-test';
import groupsDelete from './groups-delete';
import groupsList from './groups-list';
import membersAdd from './members-add';
import membersList from './members-list';
import membersRemove from './members-remove';
import notifyEventsShow from './notify-events-show';
import notifyExplain from './notify-explain';
import notifyRecipients from './notify-recipients';
import notifySend from './notify-send';
import projectsCreate from './projects-create';
import projectsDelete from './projects-delete';
import projectsList from './projects-list';
import projectsSetVisibility from './projects-set-visibility';
import sessionsList from './sessions-list';
import sessionsRevoke from './sessions-revoke';
import secretsRotateSessionKey from './secrets-rotate-session-key';
import secretsRotateSigningKey from './secrets-rotate-signing-key';
import tokensCreate from './tokens-create';
import tokensList from './tokens-list';
import tokensRevoke from './tokens-revoke';
import usersAddEmail from './users-add-email';
import usersBlock from './users-block';
import usersCreate from './users-create';
import usersList from './users-list';
import usersSetPassword from './users-set-password';
import usersSet2fa from './users-set-2fa';
import usersShow from './users-show';
import usersUnblock from './users-unblock';
import usersWebauthnRemove from './users-webauthn-remove';

export const COMMANDS: readonly AdminCommand[] = [
  dbMigrate,
  dbStatus,
  dbPrune,
  usersCreate,
  usersList,
  usersShow,
  usersBlock,
  usersUnblock,
  usersSetPassword,
  usersAddEmail,
  usersSet2fa,
  usersWebauthnRemove,
  sessionsList,
  sessionsRevoke,
  appsRegister,
  appsList,
  appsShow,
  appsUpdate,
  appsDelete,
  appsRotateSecret,
  tokensCreate,
  tokensList,
  tokensRevoke,
  groupsCreate,
  groupsList,
  groupsDelete,
  groupsSetVisibility,
  projectsCreate,
  projectsList,
  projectsDelete,
  projectsSetVisibility,
  membersAdd,
  membersList,
  membersRemove,
  notifyRecipients,
  notifyExplain,
  notifySend,
  notifyEventsShow,
  secretsRotateSessionKey,
  secretsRotateSigningKey,
  mailList,
  mailShow,
  mailRetry,
  mailTest,
  logoutDeliveriesList,
  logoutDeliveriesRetry,
  mailSuppressionsList,
  mailSuppressionsRemove,
  auditList,
];

/** Descriptions of the grouping words, by their path. */
export const GROUPS: Readonly<Record<string, string>> = {
  db: 'Database migrations and retention',
  users: 'Users: create, list, block, passwords, e-mails, two-factor authentication',
  apps: 'OAuth applications: register, list, update, delete, rotate secrets',
  tokens: 'Personal access tokens',
  groups: 'Groups: create, list, delete',
  projects: 'Projects: create, list, delete',
  members: 'Group and project members: add, list, remove',
  notify: 'Notifications: who is notified of an event and why, sending events, what they sent',
  'notify events': 'Notification events posted to the intake',
  mail: 'Outgoing mail: the outbox, resending, a test message, suppressed addresses',
  'mail suppressions': 'Addresses that bounced or complained: list, remove',
  sessions: "A user's signed-in web sessions: list, revoke",
  'logout-deliveries': 'Back-channel logout tokens to relying parties: sent, pending, failed',
  secrets: "The service's own secrets",
  audit: 'The audit trail: who did what, when',
  'secrets rotate': 'Rotate a service secret',
};
