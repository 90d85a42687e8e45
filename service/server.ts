// `npm start`: the whole service on HOST:PORT over DATABASE_URL or the local embedded PostgreSQL.
import { buildApp } from './app';
import { ConfigError, loadConfig, signingKeyPolicy } from './config';
import { DatabaseUnavailableError, openDatabase } from './db/open';
import { ensureRootUser } from './domain/bootstrap';
import { migrateLocalDatabase } from './local/service-key-file';
import { fileSigningKeySource } from './local/signing-key-file';
import { drainLogoutsOnce } from './mail/backchannel-sender';
import { createSendRateLimiter } from './mail/send-rate';
import { type MailSender, startMailSender } from './mail/sender';
import { createMailTransport } from './mail/transports';
import { type RetentionTimer, startRetentionTimer } from './retention-timer';

async function main(): Promise<void> {
  const startedAt = Date.now();
  const config = loadConfig();
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    home: config.home,
    max: config.dbPoolMax,
    preparedStatements: config.dbPreparedStatements,
    applicationName: 'lanyard-server',
    log: say,
  });
  let closing = false;
  let retention: RetentionTimer | undefined;
  let mail: MailSender | undefined;
  const app = await buildApp({ db: database.db, config });
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    say(`${signal} received, shutting down …`);
    try {
      await retention?.stop();
      await mail?.stop();
      await app.close();
    } finally {
      await database.close();
    }
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  // `npm start` runs `exec node …`: no shell or tsx wrapper in between, so the SIGTERM/SIGINT npm
  // forwards to its script reaches us. Should npm itself die (SIGKILL), we are re-parented: stop
  // (server and embedded PostgreSQL) as if signalled.
  if (process.env.npm_lifecycle_event === 'start') {
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) void shutdown('npm exited');
    }, 250).unref();
  }
  try {
    // The service keys live in LANYARD_HOME/service-keys.json (an older installation's move out of
    // the database first); TOTP secrets still in clear are sealed under them.
    const migrated = await migrateLocalDatabase(database.db, config.home, say);
    if (migrated.newlyApplied.length) say(`Applied migrations: ${migrated.newlyApplied.join(', ')}`);
    const rootPassword = await ensureRootUser(database.db);
    if (rootPassword) {
      say('Created the administrator account. Sign in with it now; this password is shown only once:');
      say(`  username: root`);
      say(`  password: ${rootPassword}`);
    }
    await app.listen({ host: config.host, port: config.port });
    retention = startRetentionTimer({
      db: database.db,
      intervalSeconds: config.pruneIntervalSeconds,
      auditRetentionDays: config.auditRetentionDays,
      mailRetentionDays: config.mail.retentionDays,
      onPruned: (report, ms) => app.log.info({ deleted: report.deleted, total: report.total, ms }, 'retention: pruned'),
      onError: (err) => app.log.warn({ err }, 'retention: prune failed, retrying at the next interval'),
    });
    // The outbox's sender, as the deployed stack runs it in its own function (docs/email.md).
    const transport = createMailTransport(config.mail);
    const signingKeys = fileSigningKeySource(config.home, signingKeyPolicy(config));
    mail = startMailSender({
      db: database.db,
      transport,
      from: config.mail.from,
      maxAttempts: config.mail.maxAttempts,
      concurrency: config.mail.concurrency,
      leaseSeconds: config.mail.leaseSeconds,
      limiter: createSendRateLimiter(config.mail.sendRate),
      onResult: (r) =>
        app.log[r.outcome === 'sent' ? 'info' : 'warn'](
          {
            mail: r.id,
            messageId: r.messageId,
            kind: r.kind,
            attempt: r.attempt,
            outcome: r.outcome,
            detail: r.detail,
          },
          `mail: ${r.outcome}`,
        ),
      onError: (err) => app.log.warn({ err }, 'mail: sender round failed, retrying'),
      // Back-channel logout tokens leave from the same loop (docs/logout.md).
      alsoDrain: () =>
        drainLogoutsOnce({
          db: database.db,
          signingKeys,
          issuer: config.publicUrl,
          maxAttempts: config.mail.maxAttempts,
          concurrency: config.mail.concurrency,
          leaseSeconds: config.mail.leaseSeconds,
          onResult: (r) =>
            app.log[r.outcome === 'sent' ? 'info' : 'warn'](
              { logoutDelivery: r.id, clientId: r.clientId, attempt: r.attempt, outcome: r.outcome, detail: r.detail },
              `back-channel logout: ${r.outcome}`,
            ),
        }),
    });
    say(`Mail goes to ${transport.description} (MAIL_URL).`);
  } catch (err) {
    await app.close().catch(() => undefined);
    await database.close().catch(() => undefined);
    throw err;
  }
  say(`Lanyard is listening on ${config.publicUrl} (ready in ${Date.now() - startedAt} ms)`);
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof DatabaseUnavailableError) {
    process.stderr.write(`lanyard: ${err.message}\n`);
  } else if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    process.stderr.write(`lanyard: the address is already in use: ${(err as Error).message}\n`);
  } else {
    process.stderr.write(`lanyard: failed to start: ${(err as Error).message.split('\n')[0]}\n`);
  }
  process.exit(1);
});
