import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { AppConfig } from '../src/config/config';
import { StartedService, startService } from '../scripts/service-process';
import { createTestContext, TestAccount, TestContext } from './helpers';
import { selfSignedCertificate } from './self-signed-certificate';
import { answerOk, eventually, Receiver, startReceiver } from './webhook-receiver';

/**
 * Deliveries survive what a service instance can suffer: a SIGKILL between the commit of a call and the
 * delivery of its event, and another instance working the same queue at the same time.
 */

const CALL = { name: 'Asha Rao', phone: '+91 90000 12345', durationSeconds: 42, transcript: [{ speaker: 'user', text: 'Namaste' }] };

describe('webhook deliveries survive a killed instance', () => {
  let directory: string;
  let certificate: ReturnType<typeof selfSignedCertificate>;
  let receiver: Receiver;
  let context: TestContext;
  let account: TestAccount;
  let server: StartedService | undefined;
  const env = () => ({
    DATABASE_URL: process.env.DATABASE_URL!,
    JOB_QUEUE_SCHEMA: `jobs_${randomBytes(6).toString('hex')}`,
    JOB_MAINTENANCE_INTERVAL_SECONDS: '1',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    // Long enough that the hanging attempt is still in flight when the process is killed.
    WEBHOOK_TIMEOUT_MS: '5000',
    // A retry is still pending whenever the process is killed in the second part.
    WEBHOOK_RETRY_SECONDS: '1,5,5,5,5,5,5,5,5,5',
    // The receiver's self-signed certificate, trusted the way an operator would trust a private CA.
    NODE_EXTRA_CA_CERTS: certificate.certFile,
    LOG_LEVEL: 'warn',
    RATE_LIMIT: '0',
  });

  beforeAll(async () => {
    directory = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooks-durability-'));
    certificate = selfSignedCertificate(directory);
    // The test's own application works no queue: it would relay (move out of the shared outbox) the servers' events.
    context = await createTestContext({ jobWorkers: false });
  });
  beforeEach(async () => {
    account = await context.createAccount();
  });
  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    await receiver?.close();
  });
  afterAll(async () => {
    await context?.close();
    fs.rmSync(directory, { recursive: true, force: true });
  });

  const api = (method: string, urlPath: string, body?: object) =>
    fetch(`http://127.0.0.1:${server!.port}${urlPath}`, {
      method,
      headers: { 'X-Api-Key': account.apiKey, 'Content-Type': 'application/json' },
      body: body && JSON.stringify(body),
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test reads the API's JSON as it comes
    }).then(async (response) => ({ status: response.status, body: (await response.json()) as any }));

  it('delivers, after a restart, the event of a call committed before a SIGKILL: mid-attempt, and while the receiver was down', async () => {
    const serverEnv = env();
    receiver = await startReceiver(() => 'hang', certificate);
    server = await startService({ env: serverEnv });
    const webhook = await api('POST', '/webhooks', { url: `https://localhost:${receiver.port}/hooks`, events: ['call.created'] });
    expect(webhook.status).toBe(201);
    const verify = (delivery: { body: string; headers: Record<string, unknown> }) =>
      new StandardWebhook(webhook.body.secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
        id: string;
        data: { id: string };
      };

    // 1. Killed mid-attempt: the receiver has the request and has not answered.
    const first = await api('POST', '/calls', CALL);
    expect(first.status).toBe(201);
    const [hung] = await receiver.waitFor(1);
    await server.stop('SIGKILL');
    receiver.respond = answerOk;
    server = await startService({ env: serverEnv });
    const [, redelivered] = await receiver.waitFor(2, 60_000);
    expect(redelivered.headers['webhook-id']).toBe(hung.headers['webhook-id']);
    expect(redelivered.body).toBe(hung.body);
    expect(verify(redelivered).data.id).toBe(first.body.id);

    // 2. Killed while the receiver was down: the call committed, its attempt failed, its retry was queued.
    await receiver.close();
    const second = await api('POST', '/calls', { ...CALL, name: 'While the receiver was down' });
    const failedOnce = await eventually(
      () => api('GET', `/webhooks/${webhook.body.id}/deliveries`),
      ({ body }) => body.length === 2 && body[0].attempts >= 1,
    );
    expect(failedOnce.body[0]).toMatchObject({ lastStatusCode: null, lastError: expect.stringContaining('could not be reached') });
    await server.stop('SIGKILL');
    receiver = await startReceiver(answerOk, certificate, receiver.port);
    server = await startService({ env: serverEnv });
    const [late] = await receiver.waitFor(1, 60_000);
    expect(verify(late).data.id).toBe(second.body.id);

    const log = await eventually(
      () => api('GET', `/webhooks/${webhook.body.id}/deliveries`),
      ({ body }) => body.every((row: { status: string }) => row.status === 'succeeded'),
      60_000,
    );
    expect(log.body.map((row: { eventId: string }) => row.eventId)).toEqual([verify(late).id, verify(redelivered).id]);
  }, 180_000);

  it('relays, when an instance starts, the event of a call whose instance was killed after the commit and before it queued the relay', async () => {
    const serverEnv = env();
    receiver = await startReceiver(answerOk, certificate);
    // An instance that serves the API and works no queue: nothing relays the event before the kill.
    server = await startService({ env: { ...serverEnv, JOB_WORKERS: 'false' } });
    const webhook = await api('POST', '/webhooks', { url: `https://localhost:${receiver.port}/hooks`, events: ['call.created'] });
    const call = await api('POST', '/calls', { ...CALL, name: 'Killed before the relay' });
    expect(call.status).toBe(201);
    await server.stop('SIGKILL');
    // As if it died before queueing the relay: only the event and its outbox row are left.
    const database = context.app.get(DataSource);
    await database.query(`DELETE FROM ${serverEnv.JOB_QUEUE_SCHEMA}.job WHERE name = 'webhooks.relay'`);
    expect(await database.query(`SELECT count(*)::int AS n FROM webhook_outbox WHERE account_id = $1`, [account.id])).toEqual([{ n: 1 }]);
    // The instance queues a relay as it starts. The minute's relay may come too, when a minute begins meanwhile: pg-boss
    // queues it through its send-it queue, so there is one more relay at most for each of those, and none without.
    server = await startService({ env: serverEnv });
    const [{ relays, minutes }] = await database.query(
      `SELECT count(*) FILTER (WHERE name = 'webhooks.relay')::int AS relays,
              count(*) FILTER (WHERE name = '__pgboss__send-it' AND data->>'name' = 'webhooks.relay')::int AS minutes
         FROM ${serverEnv.JOB_QUEUE_SCHEMA}.job`,
    );
    expect(relays).toBeGreaterThanOrEqual(1);
    expect(relays).toBeLessThanOrEqual(1 + minutes);
    const [delivery] = await receiver.waitFor(1, 15_000);
    expect(
      (
        new StandardWebhook(webhook.body.secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
          data: { id: string };
        }
      ).data.id,
    ).toBe(call.body.id);
    expect(await database.query(`SELECT count(*)::int AS n FROM webhook_outbox WHERE account_id = $1`, [account.id])).toEqual([{ n: 0 }]);
  }, 120_000);
});

describe('webhook deliveries with two instances on one queue', () => {
  let a: TestContext;
  let b: TestContext;
  let receiver: Receiver;

  beforeAll(async () => {
    const shared: Partial<AppConfig> = {
      jobQueueSchema: `jobs_${randomBytes(6).toString('hex')}`,
      webhooks: { allowPrivateTargets: true, timeoutMs: 5_000, retrySeconds: [1, 1], retentionDays: 30 },
    };
    a = await createTestContext(shared);
    b = await createTestContext(shared);
    receiver = await startReceiver(answerOk);
  });
  afterAll(async () => {
    await receiver?.close();
    await a?.close();
    await b?.close();
  });

  it('delivers each of 500 events exactly once when the receiver answers at once', async () => {
    const account = await a.createAccount();
    const { id: webhookId } = (
      await a
        .as(account)
        .post('/webhooks')
        .send({ url: receiver.url(), events: ['call.created'] })
        .expect(201)
    ).body;
    const calls: string[] = [];
    // 500 calls, half through each instance, 10 at a time.
    for (let round = 0; round < 50; round++) {
      const created = await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          ((round + index) % 2 ? a : b)
            .as(account)
            .post('/calls')
            .send({ ...CALL, name: `Caller ${round}-${index}` })
            .expect(201),
        ),
      );
      calls.push(...created.map((response) => response.body.id as string));
    }
    await receiver.waitFor(500, 60_000);
    // Every delivery recorded as succeeded, and every job finished: nothing more is coming.
    const dataSource = a.app.get(DataSource);
    await eventually(
      async () =>
        (
          await dataSource.query(
            `SELECT (SELECT count(*)::int FROM webhook_deliveries WHERE account_id = $1 AND webhook_id = $2 AND status = 'succeeded') AS succeeded,
                  (SELECT count(*)::int FROM ${a.config.jobQueueSchema}.job WHERE name = 'webhooks.deliver' AND state < 'completed') AS unfinished`,
            [account.id, webhookId],
          )
        )[0],
      (counts: { succeeded: number; unfinished: number }) => counts.succeeded === 500 && counts.unfinished === 0,
      60_000,
    );
    const received = receiver.deliveries.map((delivery) => JSON.parse(delivery.body) as { id: string; data: { id: string } });
    expect(received).toHaveLength(500);
    expect(new Set(received.map((event) => event.id)).size).toBe(500);
    expect(received.map((event) => event.data.id).sort()).toEqual([...calls].sort());
    const attempts = await dataSource.query(`SELECT DISTINCT attempts FROM webhook_deliveries WHERE account_id = $1`, [account.id]);
    expect(attempts).toEqual([{ attempts: 1 }]);
  }, 120_000);
});
