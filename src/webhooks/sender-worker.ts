/**
 * The webhook sender's thread (see Sender). It opens its own connection to the registry, read-only
 * (query_only): WAL lets it read while the main thread writes, and it never takes the write lock,
 * so it can never make an ingest commit wait. Messages: see ToSender and FromSender in dispatcher.ts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { WebhookConfig } from '../config.js';
import { SecretBox, type SecretsKey } from '../stores/secrets.js';
import type { FromSender, ToSender } from './dispatcher.js';
import { Sender, sqliteOutbox, type SenderOptions } from './sender.js';

interface SenderWorkerData {
  registryPath: string;
  config: WebhookConfig;
  options: SenderOptions;
  /** The key of the secrets at rest: in workerData, never in the environment (workers share the process's). */
  secretsKey: SecretsKey;
}

const port = parentPort!;
const { registryPath, config, options, secretsKey } = workerData as SenderWorkerData;
// Start-up sealed every value under the current key (resealEndpointSecrets): this thread needs only that one.
const box = new SecretBox({ bytes: Buffer.from(secretsKey.bytes), source: secretsKey.source });
const post = (message: FromSender) => port.postMessage(message);

const db = new Database(registryPath, { fileMustExist: true });
db.pragma('query_only = ON');
db.pragma('busy_timeout = 5000');

const sender = new Sender(
  sqliteOutbox(db, box),
  box,
  config,
  { error: (obj, msg) => post({ kind: 'log', level: 'error', obj, msg }) },
  options,
  (attempt) => post({ kind: 'attempted', attempt }),
);

port.on('message', (message: ToSender) => {
  switch (message.kind) {
    case 'start':
      sender.start();
      break;
    case 'wake':
      sender.wake();
      break;
    case 'recorded':
      sender.recorded(message.ids);
      break;
    case 'attempt':
      void sender.attemptNow(message.deliveryId).then(
        (taken) => taken === true || post({ kind: taken, deliveryId: message.deliveryId }),
        () => post({ kind: 'unknown', deliveryId: message.deliveryId }),
      );
      break;
    case 'close':
      void sender.close(message.waitMs).then(() => {
        db.close();
        post({ kind: 'closed' });
      });
      break;
  }
});
