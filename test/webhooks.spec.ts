import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig, WebhooksConfig } from '../src/config/config';
import { Database, TransactionSql } from '../src/database/database';
import { WebhookDeliveries } from '../src/webhooks/webhook-deliveries';
import { WebhookEvents } from '../src/webhooks/webhook-events.service';
import { WebhookRelay } from '../src/webhooks/webhook-relay';
import { WebhookRetention } from '../src/webhooks/webhook-retention';
import { generateWebhookSecret } from '../src/webhooks/webhook-signature';
import { WebhookTargets } from '../src/webhooks/webhook-targets';
import { CANCELLED_BY_ERASURE, WebhooksRepository } from '../src/webhooks/webhooks.repository';
import { createTestContext, listenOnLoopback, TestAccount, TestContext } from './helpers';
import { answerOk, eventually, Receiver, Responder, startReceiver } from './webhook-receiver';

const webhooksConfig = (overrides: Partial<WebhooksConfig> = {}): Partial<AppConfig> => ({
  webhooks: { allowPrivateTargets: true, timeoutMs: 2_000, retrySeconds: [1, 1], retentionDays: 30, ...overrides },
  jobMaintenanceIntervalSeconds: 1,
});

const CALL = {
  name: 'Priya Sharma',
  phone: '+91-98765-43210',
  status: 'qualified',
  durationSeconds: 95,
  transcript: [{ speaker: 'user', text: 'मुझे 2BHK फ्लैट चाहिए' }],
  feedback: { rating: 5 },
};

/** The receiver's view: the delivery verified as a receiver would, with the standardwebhooks package. */
function verified(secret: string, delivery: { headers: Record<string, unknown>; body: string }) {
  return new StandardWebhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
    id: string;
    type: string;
    createdAt: string;
    data: Record<string, unknown>;
  };
}

/** A delivery as the log (GET /webhooks/{id}/deliveries) shows it. */
type LoggedDelivery = Record<string, unknown> & { id: string; attempts: number; status: string; nextAttemptAt: string | null };

interface WebhookSuite {
  context: TestContext;
  receiver: Receiver;
  /** A fresh account for each test. */
  account: TestAccount;
  /** A webhook of `who` to the receiver, for every call event unless `body` says otherwise. */
  createWebhook: (body?: object, who?: TestAccount) => Promise<{ id: number; secret: string } & Record<string, unknown>>;
  deliveries: (webhookId: number, who?: TestAccount) => Promise<LoggedDelivery[]>;
}

/**
 * The setup of a describe of webhook tests, registered in it: the application with these webhook settings, and a
 * receiver, started once; before each test, a fresh account, and the receiver emptied and answering `respond`.
 */
function webhookSuite(settings: Partial<WebhooksConfig> = {}, respond: Responder = answerOk): WebhookSuite {
  const suite = {
    createWebhook: async (body: object = {}, who = suite.account) =>
      (
        await suite.context
          .as(who)
          .post('/webhooks')
          .send({ url: suite.receiver.url(), events: ['call.created', 'call.recording.ready', 'call.deleted'], ...body })
          .expect(201)
      ).body,
    deliveries: (webhookId: number, who = suite.account) =>
      suite.context
        .as(who)
        .get(`/webhooks/${webhookId}/deliveries`)
        .expect(200)
        .then((response) => response.body as LoggedDelivery[]),
  } as WebhookSuite;
  beforeAll(async () => {
    suite.context = await createTestContext(webhooksConfig(settings));
    suite.receiver = await startReceiver(respond);
  });
  afterAll(async () => {
    await suite.receiver?.close();
    await suite.context?.close();
  });
  beforeEach(async () => {
    suite.account = await suite.context.createAccount();
    suite.receiver.deliveries.length = 0;
    suite.receiver.respond = respond;
  });
  return suite;
}

describe('webhooks', () => {
  const suite = webhookSuite();
  const { createWebhook, deliveries } = suite;
  /**
   * The types of the events recorded for the account, relayed or still in the outbox: a change's transaction writes
   * its event to the outbox, and the relay moves it to webhook_events later, in one transaction, so one statement
   * over both sees every event committed so far exactly once.
   */
  const recordedEvents = (accountId: number): Promise<{ type: string }[]> =>
    suite.context.app
      .get(DataSource)
      .query(`SELECT type FROM webhook_events WHERE account_id = $1 UNION ALL SELECT type FROM webhook_outbox WHERE account_id = $1`, [
        accountId,
      ]);
  /** Waits until no job of the delivery is queued or running: whatever it was going to do is done. */
  const jobsSettled = (deliveryId: string) =>
    eventually(
      () =>
        suite.context.app
          .get(DataSource)
          .query(
            `SELECT count(*)::int AS n FROM ${suite.context.config.jobQueueSchema}.job WHERE name = 'webhooks.deliver' AND data->>'deliveryId' = $1 AND state < 'completed'`,
            [deliveryId],
          ),
      (rows: { n: number }[]) => rows[0].n === 0,
    );
  describe('management', () => {
    it('creates a webhook with a secret shown once, then lists, reads, changes and deletes it', async () => {
      const created = await createWebhook({ description: 'CRM sync' });
      expect(created).toEqual({
        id: expect.any(Number),
        url: suite.receiver.url(),
        events: ['call.created', 'call.recording.ready', 'call.deleted'],
        description: 'CRM sync',
        enabled: true,
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(Buffer.from(created.secret.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);
      const { secret: _secret, ...shown } = created;
      expect((await suite.context.as(suite.account).get('/webhooks').expect(200)).body).toEqual([shown]);
      expect((await suite.context.as(suite.account).get(`/webhooks/${created.id}`).expect(200)).body).toEqual(shown);

      const changed = (
        await suite.context
          .as(suite.account)
          .patch(`/webhooks/${created.id}`)
          .send({ events: ['call.deleted', 'call.created', 'call.deleted'], enabled: false })
          .expect(200)
      ).body;
      expect(changed).toMatchObject({ events: ['call.created', 'call.deleted'], enabled: false, description: 'CRM sync' });
      expect(changed).not.toHaveProperty('secret');

      await suite.context.as(suite.account).delete(`/webhooks/${created.id}`).expect(204);
      await suite.context.as(suite.account).get(`/webhooks/${created.id}`).expect(404);
      await suite.context.as(suite.account).delete(`/webhooks/${created.id}`).expect(404);
    });

    it.each([
      ['no url', { url: undefined }],
      ['a url that is not one', { url: 'not a url' }],
      ['a relative url', { url: '/hooks' }],
      ['an ftp url', { url: 'ftp://example.com/hooks' }],
      ['credentials', { url: 'https://user:secret@example.com/hooks' }],
      ['a url over 2,000 characters', { url: `https://example.com/${'a'.repeat(2000)}` }],
      ['the cloud metadata address', { url: 'http://169.254.169.254/latest/meta-data' }],
      ['no events', { events: undefined }],
      ['an empty list of events', { events: [] }],
      ['an unknown event', { events: ['call.created', 'call.exploded'] }],
      ['events that are not a list', { events: 'call.created' }],
      ['an unknown field', { secret: 'whsec_mine' }],
      ['a description over 2,000 characters', { description: 'x'.repeat(2001) }],
      ['enabled that is not a boolean', { enabled: 'yes' }],
    ])('refuses %s with a 400 in the error shape, creating nothing', async (_case, change) => {
      const response = await suite.context
        .as(suite.account)
        .post('/webhooks')
        .send({ url: suite.receiver.url(), events: ['call.created'], ...change })
        .expect(400);
      expect(response.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.any(String), details: expect.any(Array) });
      expect((await suite.context.as(suite.account).get('/webhooks').expect(200)).body).toEqual([]);
    });

    it('counts the url as stored, normalised: 2,000 characters pass, 2,001 or percent-encoding past 2,000 do not', async () => {
      const base = suite.receiver.url();
      const sized = (length: number) => `${base}?${'a'.repeat(length - base.length - 1)}`;
      const accepted = (
        await suite.context
          .as(suite.account)
          .post('/webhooks')
          .send({ url: sized(2_000), events: ['call.created'] })
          .expect(201)
      ).body;
      expect(accepted.url).toHaveLength(2_000);
      const tooLong = await suite.context
        .as(suite.account)
        .post('/webhooks')
        .send({ url: sized(2_001), events: ['call.created'] })
        .expect(400);
      expect(tooLong.body.details).toEqual([{ field: 'url', message: 'url must be at most 2000 characters' }]);
      const encoded = `${base}?${'é'.repeat(500)}`; // 6 characters each once encoded
      const refused = await suite.context
        .as(suite.account)
        .post('/webhooks')
        .send({ url: encoded, events: ['call.created'] })
        .expect(400);
      expect(refused.body.details[0].message).toContain(`(${base.length + 1 + 3_000} here)`);
      expect((await suite.context.as(suite.account).get('/webhooks').expect(200)).body).toHaveLength(1);
    });

    it('refuses a changed url the same way, and leaves the webhook as it was', async () => {
      const created = await createWebhook();
      await suite.context.as(suite.account).patch(`/webhooks/${created.id}`).send({ url: 'ftp://example.com/' }).expect(400);
      await suite.context.as(suite.account).patch(`/webhooks/${created.id}`).send({ events: [] }).expect(400);
      expect((await suite.context.as(suite.account).get(`/webhooks/${created.id}`).expect(200)).body).toMatchObject({
        url: created.url,
        events: created.events,
      });
    });

    it('allows 20 webhooks per account and refuses the 21st with a 400, even when they are created at once', async () => {
      const statuses = await Promise.all(
        Array.from({ length: 24 }, () =>
          suite.context
            .as(suite.account)
            .post('/webhooks')
            .send({ url: suite.receiver.url(), events: ['call.created'] })
            .then((r) => r.status),
        ),
      );
      expect(statuses.filter((status) => status === 201)).toHaveLength(20);
      expect(statuses.filter((status) => status === 400)).toHaveLength(4);
      expect((await suite.context.as(suite.account).get('/webhooks').expect(200)).body).toHaveLength(20);
      const refused = await suite.context
        .as(suite.account)
        .post('/webhooks')
        .send({ url: suite.receiver.url(), events: ['call.created'] })
        .expect(400);
      expect(refused.body.message).toContain('at most 20 webhooks');
      // Another account has its own 20.
      await createWebhook({}, await suite.context.createAccount());
    });

    it('hides every webhook and delivery of another account: 404, and nothing changes', async () => {
      const created = await createWebhook();
      await suite.context.as(suite.account).post('/calls').send(CALL).expect(201);
      const [delivery] = await eventually(
        () => deliveries(created.id),
        (rows) => rows.length === 1,
      );
      const intruder = await suite.context.createAccount();
      await suite.context.as(intruder).get(`/webhooks/${created.id}`).expect(404);
      await suite.context.as(intruder).patch(`/webhooks/${created.id}`).send({ enabled: false }).expect(404);
      await suite.context.as(intruder).patch(`/webhooks/${created.id}`).send({ url: 'ftp://nowhere' }).expect(404);
      await suite.context.as(intruder).post(`/webhooks/${created.id}/rotate-secret`).expect(404);
      await suite.context.as(intruder).post(`/webhooks/${created.id}/test`).expect(404);
      await suite.context.as(intruder).get(`/webhooks/${created.id}/deliveries`).expect(404);
      await suite.context.as(intruder).post(`/webhooks/${created.id}/deliveries/${delivery.id}/retry`).expect(404);
      await suite.context.as(intruder).delete(`/webhooks/${created.id}`).expect(404);
      expect((await suite.context.as(intruder).get('/webhooks').expect(200)).body).toEqual([]);
      // The intruder's own webhook cannot reach A's delivery either.
      const own = await createWebhook({}, intruder);
      await suite.context.as(intruder).post(`/webhooks/${own.id}/deliveries/${delivery.id}/retry`).expect(404);
      expect((await suite.context.as(suite.account).get(`/webhooks/${created.id}`).expect(200)).body).toMatchObject({ enabled: true });
      expect(await deliveries(created.id)).toHaveLength(1);
    });

    it('lists deliveries newest first, 50 by default, at most 200; a bad limit is a 400', async () => {
      const created = await createWebhook();
      for (let index = 0; index < 51; index++) await suite.context.as(suite.account).post(`/webhooks/${created.id}/test`).expect(202);
      const all = () =>
        suite.context
          .as(suite.account)
          .get(`/webhooks/${created.id}/deliveries?limit=200`)
          .expect(200)
          .then((response) => response.body as Record<string, unknown>[]);
      const rows = await eventually(all, (list) => list.length === 51 && list.every((row) => row.status === 'succeeded'));
      const times = rows.map((row) => Date.parse(row.createdAt as string));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      expect(await deliveries(created.id)).toEqual(rows.slice(0, 50));
      expect((await suite.context.as(suite.account).get(`/webhooks/${created.id}/deliveries?limit=2`).expect(200)).body).toEqual(
        rows.slice(0, 2),
      );
      for (const limit of ['0', '201', 'abc', '1.5'])
        await suite.context.as(suite.account).get(`/webhooks/${created.id}/deliveries?limit=${limit}`).expect(400);
      await suite.context.as(suite.account).get(`/webhooks/${created.id}/deliveries?limit=200`).expect(200);
      await suite.context.as(suite.account).get('/webhooks/999999/deliveries').expect(404);
    });
  });

  describe('events', () => {
    it('delivers call.created, signed, with the call exactly as GET /calls/{callId} returns it', async () => {
      const { id, secret } = await createWebhook({ events: ['call.created'] });
      const call = (await suite.context.as(suite.account).post('/calls').send(CALL).expect(201)).body;
      const [delivery] = await suite.receiver.waitFor(1);
      const event = verified(secret, delivery);
      expect(event).toEqual({
        id: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
        type: 'call.created',
        createdAt: expect.any(String),
        data: call,
      });
      expect(event.data).toEqual((await suite.context.as(suite.account).get(`/calls/${call.id}`).expect(200)).body);
      expect(delivery.headers['webhook-id']).toBe(event.id);
      expect(delivery.headers['content-type']).toBe('application/json');
      const [row] = await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.status === 'succeeded',
      );
      expect(row).toEqual({
        id: expect.any(String),
        event: 'call.created',
        eventId: event.id,
        status: 'succeeded',
        attempts: 1,
        lastStatusCode: 204,
        lastError: null,
        nextAttemptAt: null,
        createdAt: expect.any(String),
      });
    });

    it('sends nothing for a test call, nor to a webhook that is disabled or subscribes to other events', async () => {
      await createWebhook({ events: ['call.deleted'] });
      const disabled = await createWebhook({ enabled: false });
      await suite.context
        .as(suite.account)
        .post('/calls')
        .send({ ...CALL, isTest: true })
        .expect(201);
      await suite.context.as(suite.account).post('/calls').send(CALL).expect(201);
      // A ping to the disabled webhook, sent after the calls, arrives: nothing else came before it.
      await suite.context.as(suite.account).post(`/webhooks/${disabled.id}/test`).expect(202);
      const [delivery] = await suite.receiver.waitFor(1);
      expect(JSON.parse(delivery.body)).toMatchObject({ type: 'ping', data: { webhookId: disabled.id } });
      const events = await recordedEvents(suite.account.id);
      expect(events).toEqual([{ type: 'ping' }]);
    });

    it('delivers call.created for the call a conversation becomes when it ends, and nothing for a test conversation', async () => {
      const { secret } = await createWebhook({ events: ['call.created'] });
      const agent = (await suite.context.as(suite.account).post('/agents').send({ name: 'Front desk' }).expect(201)).body;
      const talk = async (test: boolean) => {
        const started = (await suite.context.as(suite.account).post(`/agents/${agent.id}/conversations`).send({ test }).expect(201)).body;
        const authorization = `Bearer ${started.token}`;
        await suite.context.http
          .post(`/conversations/${started.conversationId}/messages`)
          .set('Authorization', authorization)
          .send({ text: 'Open on Sunday?' })
          .expect(200);
        await suite.context.http.post(`/conversations/${started.conversationId}/end`).set('Authorization', authorization).expect(204);
        return started.conversationId as string;
      };
      await talk(true);
      const callId = await talk(false);
      const [delivery] = await suite.receiver.waitFor(1);
      const event = verified(secret, delivery);
      expect(event.type).toBe('call.created');
      expect(event.data).toEqual((await suite.context.as(suite.account).get(`/calls/${callId}`).expect(200)).body);
      // The test conversation's call was recorded first, with no event: this is the only one.
      const events = await recordedEvents(suite.account.id);
      expect(events).toEqual([{ type: 'call.created' }]);
    });

    it('delivers call.recording.ready when an upload commits, with hasRecording true', async () => {
      const { secret } = await createWebhook({ events: ['call.recording.ready'] });
      const call = (await suite.context.as(suite.account).post('/calls').send(CALL).expect(201)).body;
      await suite.context
        .as(suite.account)
        .put(`/calls/${call.id}/recording`)
        .set('Content-Type', 'audio/mpeg')
        .send(Buffer.from('ID3 audio'))
        .expect(204);
      const [delivery] = await suite.receiver.waitFor(1);
      const event = verified(secret, delivery);
      expect(event.type).toBe('call.recording.ready');
      expect(event.data).toEqual({ ...call, hasRecording: true });
      expect(event.data).toEqual((await suite.context.as(suite.account).get(`/calls/${call.id}`).expect(200)).body);
    });

    it('delivers call.deleted ({ id }) when DELETE /calls/{callId} erases a call, and erases the stored payloads of its earlier events, keeping their log lines', async () => {
      suite.receiver.respond = () => ({ status: 503 });
      const { id: webhookId, secret } = await createWebhook();
      const call = (await suite.context.as(suite.account).post('/calls').send(CALL).expect(201)).body;
      await suite.receiver.waitFor(1);
      const [created] = await eventually(
        () => deliveries(webhookId),
        (rows) => rows[0]?.attempts === 1,
      );
      expect(created).toMatchObject({ status: 'pending', lastStatusCode: 503 });
      suite.receiver.respond = answerOk;

      await suite.context.as(suite.account).delete(`/calls/${call.id}`).expect(204);

      const deleted = (await suite.receiver.waitFor(2))[1];
      expect(verified(secret, deleted)).toMatchObject({ type: 'call.deleted', data: { id: call.id } });
      const rows = await eventually(
        () => deliveries(webhookId),
        (list) => list.length === 2 && list[0].status === 'succeeded',
      );
      expect(rows[1]).toMatchObject({
        id: created.id,
        event: 'call.created',
        status: 'failed',
        nextAttemptAt: null,
        lastError: expect.stringContaining('erased'),
      });
      const stored = await suite.context.app
        .get(DataSource)
        .query(`SELECT type, body FROM webhook_events WHERE account_id = $1 ORDER BY created_at`, [suite.account.id]);
      expect(stored).toEqual([
        { type: 'call.created', body: null },
        { type: 'call.deleted', body: expect.stringContaining(call.id) },
      ]);
      expect(JSON.stringify(stored)).not.toContain('2BHK');
      // The cancelled delivery is not attempted again (its queued retry finds nothing to do), and cannot be retried.
      await suite.context.as(suite.account).post(`/webhooks/${webhookId}/deliveries/${created.id}/retry`).expect(409);
      await jobsSettled(created.id);
      expect(suite.receiver.deliveries).toHaveLength(2);
      expect((await deliveries(webhookId))[1]).toMatchObject({ status: 'failed', attempts: 1 });
    });

    it('sends no call.deleted for the erasure of a test call', async () => {
      await createWebhook({ events: ['call.deleted'] });
      const testCall = (
        await suite.context
          .as(suite.account)
          .post('/calls')
          .send({ ...CALL, isTest: true })
          .expect(201)
      ).body;
      await suite.context.as(suite.account).delete(`/calls/${testCall.id}`).expect(204);
      await suite.context.as(suite.account).delete(`/calls/${testCall.id}`).expect(404);
      const events = await recordedEvents(suite.account.id);
      expect(events).toEqual([]);
    });

    it('commits a call and its event together: a failure after the event was recorded leaves neither', async () => {
      await createWebhook();
      // The event and its outbox row are written (in the request's transaction), then something fails.
      const repository = suite.context.app.get(WebhooksRepository);
      const recordEvent = repository.recordEvent.bind(repository);
      const written: boolean[] = [];
      const spy = jest.spyOn(repository, 'recordEvent').mockImplementationOnce(async (...args) => {
        written.push(await recordEvent(...args));
        throw new Error('a failure after the event was recorded');
      });
      try {
        await suite.context
          .as(suite.account)
          .post('/calls')
          .send({ ...CALL, name: 'Rolled back' })
          .expect(500);
      } finally {
        spy.mockRestore();
      }
      expect(written).toEqual([true]);
      const dataSource = suite.context.app.get(DataSource);
      expect(await dataSource.query(`SELECT id FROM calls WHERE account_id = $1`, [suite.account.id])).toEqual([]);
      expect(await dataSource.query(`SELECT id FROM webhook_events WHERE account_id = $1`, [suite.account.id])).toEqual([]);
      expect(await dataSource.query(`SELECT seq FROM webhook_outbox WHERE account_id = $1`, [suite.account.id])).toEqual([]);
      expect(await dataSource.query(`SELECT id FROM webhook_deliveries WHERE account_id = $1`, [suite.account.id])).toEqual([]);
      expect(
        await dataSource.query(`SELECT id FROM ${suite.context.config.jobQueueSchema}.job WHERE data->>'accountId' = $1`, [
          String(suite.account.id),
        ]),
      ).toEqual([]);
      // The next call goes through, and only its event is delivered.
      await suite.context.as(suite.account).post('/calls').send(CALL).expect(201);
      const [delivery] = await suite.receiver.waitFor(1);
      expect(JSON.parse(delivery.body).data.name).toBe(CALL.name);
    });

    it('rolls back an event recorded in a transaction that fails: no row, no job, nothing sent', async () => {
      const { id } = await createWebhook();
      await expect(
        suite.context.app.get(Database).transaction(async (sql) => {
          await suite.context.app
            .get(WebhookEvents)
            .callDeleted(sql, suite.account.id, { id: '5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90', isTest: false });
          throw new Error('the deletion failed');
        }),
      ).rejects.toThrow('the deletion failed');
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      const [delivery] = await suite.receiver.waitFor(1);
      expect(JSON.parse(delivery.body).type).toBe('ping');
      expect(await deliveries(id)).toHaveLength(1);
    });
  });

  describe('relay (the outbox)', () => {
    /**
     * Records an event as a change's transaction does, then runs `meanwhile` in that transaction before it
     * commits (no relay sees the event until then). No relay is queued for it, as if its instance then died.
     */
    const recordUnrelayed = (callId: string, meanwhile: (sql: TransactionSql) => Promise<void> = async () => undefined) =>
      suite.context.app.get(Database).transaction(async (sql) => {
        const event = {
          id: randomUUID(),
          type: 'call.created' as const,
          callId,
          body: JSON.stringify({ data: { id: callId } }),
          createdAt: new Date(),
        };
        const recorded = await suite.context.app.get(WebhooksRepository).recordEvent(suite.account.id, event, sql);
        await meanwhile(sql);
        return recorded;
      });
    const relay = () => suite.context.app.get(WebhookRelay).relay();

    it("writes only the event's outbox row in the change's transaction; the relay moves it to the events with its delivery", async () => {
      const { id, secret } = await createWebhook({ events: ['call.created'] });
      const callId = randomUUID();
      const recorded = await recordUnrelayed(callId, async (sql) => {
        expect(await sql.query(`SELECT type, call_id AS "callId" FROM webhook_outbox WHERE account_id = $1`, [suite.account.id])).toEqual([
          { type: 'call.created', callId },
        ]);
        expect(await sql.query(`SELECT id FROM webhook_events WHERE account_id = $1`, [suite.account.id])).toEqual([]);
        expect(await sql.query(`SELECT id FROM webhook_deliveries WHERE account_id = $1`, [suite.account.id])).toEqual([]);
      });
      expect(recorded).toBe(true);
      await relay();
      const [delivery] = await suite.receiver.waitFor(1);
      expect(verified(secret, delivery).data).toEqual({ id: callId });
      const [row] = await eventually(
        () => deliveries(id),
        (rows) => rows.length === 1 && rows[0].status === 'succeeded',
      );
      const dataSource = suite.context.app.get(DataSource);
      expect(await dataSource.query(`SELECT seq FROM webhook_outbox WHERE account_id = $1`, [suite.account.id])).toEqual([]);
      expect(
        await dataSource.query(
          `SELECT 'evt_' || replace(id::text, '-', '') AS id, call_id AS "callId" FROM webhook_events WHERE account_id = $1`,
          [suite.account.id],
        ),
      ).toEqual([{ id: row.eventId, callId }]);
    });

    it('writes nothing for an account whose webhooks do not subscribe, and relays to the webhooks subscribed when it runs', async () => {
      const { id } = await createWebhook({ events: ['call.deleted'] });
      expect(await recordUnrelayed(randomUUID())).toBe(false);
      expect(
        await suite.context.app.get(DataSource).query(`SELECT seq FROM webhook_outbox WHERE account_id = $1`, [suite.account.id]),
      ).toEqual([]);
      // Recorded while this one subscribed; by the time it commits and is relayed, it is disabled and another subscribes.
      const { id: disabled } = await createWebhook({ events: ['call.created'] });
      let latest = 0;
      await recordUnrelayed(randomUUID(), async () => {
        await suite.context.as(suite.account).patch(`/webhooks/${disabled}`).send({ enabled: false }).expect(200);
        latest = (await createWebhook({ events: ['call.created'] })).id;
      });
      await relay();
      await suite.receiver.waitFor(1);
      expect(
        await eventually(
          () => deliveries(latest),
          (rows) => rows[0]?.status === 'succeeded',
        ),
      ).toHaveLength(1);
      expect(await deliveries(id)).toEqual([]);
      expect(await deliveries(disabled)).toEqual([]);
    });

    it('writes the delivery of an event erased before it was relayed as cancelled, and sends nothing', async () => {
      const { id } = await createWebhook({ events: ['call.created'] });
      const callId = randomUUID();
      await recordUnrelayed(callId, (sql) => suite.context.app.get(WebhooksRepository).erasePayloadsOfCall(suite.account.id, callId, sql));
      await relay();
      const [row] = await eventually(
        () => deliveries(id),
        (rows) => rows.length === 1,
      );
      expect(row).toMatchObject({ status: 'failed', attempts: 0, nextAttemptAt: null, lastError: CANCELLED_BY_ERASURE });
      expect(
        await suite.context.app
          .get(DataSource)
          .query(`SELECT id FROM ${suite.context.config.jobQueueSchema}.job WHERE name = 'webhooks.deliver' AND data->>'deliveryId' = $1`, [
            row.id,
          ]),
      ).toEqual([]);
      expect(suite.receiver.deliveries).toEqual([]);
    });

    it('erases the payload of an event that a relay is moving while the call is deleted', async () => {
      const { id } = await createWebhook({ events: ['call.created'] });
      const dataSource = suite.context.app.get(DataSource);
      const repository = suite.context.app.get(WebhooksRepository);
      const callId = randomUUID();
      await recordUnrelayed(callId);
      let erasure: Promise<void> | undefined;
      await suite.context.app.get(Database).transaction(async (sql) => {
        // This relay has taken the row and written the event, and has not committed: the erasure waits for it.
        // (Should the minute's relay have taken the row first, the erasure runs after it, which is tested below too.)
        const { events, queued } = await repository.relayEvents(100, sql);
        await suite.context.app.get(WebhookDeliveries).enqueueKeys(sql, queued);
        erasure = repository.erasePayloadsOfCall(suite.account.id, callId);
        if (events === 0) return;
        await eventually(
          () =>
            dataSource.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE webhook_outbox SET body = NULL%'`,
            ),
          (rows: { n: number }[]) => rows[0].n === 1,
        );
      });
      await erasure;
      expect(
        await dataSource.query(`SELECT body FROM webhook_events WHERE account_id = $1 AND call_id = $2`, [suite.account.id, callId]),
      ).toEqual([{ body: null }]);
      // Its delivery is not left pending: cancelled by the erasure, as a rule. (An attempt that a worker claimed in
      // the moment between the relay's commit and the erasure's goes out, as any attempt in flight when a call is deleted.)
      const [row] = await eventually(
        () => deliveries(id),
        (rows) => rows.length === 1 && rows[0].status !== 'pending',
      );
      if (row.status === 'failed') expect(row.lastError).toBe(CANCELLED_BY_ERASURE);
    });

    it('leaves out a webhook deleted while the relay runs, and relays the rest', async () => {
      const { id: deleted } = await createWebhook({ events: ['call.created'] });
      const { id: kept } = await createWebhook({ events: ['call.created'] });
      await recordUnrelayed(randomUUID());
      const dataSource = suite.context.app.get(DataSource);
      let relayed: Promise<number> | undefined;
      await suite.context.app.get(Database).transaction(async (sql) => {
        await sql.query(`DELETE FROM webhooks WHERE account_id = $1 AND id = $2`, [suite.account.id, deleted]);
        // The relay reaches the webhook being deleted and waits for the deletion to commit or not.
        relayed = relay();
        await eventually(
          () =>
            dataSource.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH taken AS%'`,
            ),
          (rows: { n: number }[]) => rows[0].n === 1,
        );
      });
      await relayed; // no foreign key error
      await suite.receiver.waitFor(1);
      expect(
        await eventually(
          () => deliveries(kept),
          (rows) => rows[0]?.status === 'succeeded',
        ),
      ).toHaveLength(1);
      expect(await dataSource.query(`SELECT webhook_id FROM webhook_deliveries WHERE account_id = $1`, [suite.account.id])).toEqual([
        { webhook_id: kept },
      ]);
    });

    it('is a job queued every minute (and by each instance as it starts: see webhooks-durability), one waiting at a time', async () => {
      const dataSource = suite.context.app.get(DataSource);
      const [queue] = await dataSource.query(
        `SELECT policy FROM ${suite.context.config.jobQueueSchema}.queue WHERE name = 'webhooks.relay'`,
      );
      expect(queue).toEqual({ policy: 'short' });
      const [schedule] = await dataSource.query(
        `SELECT cron, timezone FROM ${suite.context.config.jobQueueSchema}.schedule WHERE name = 'webhooks.relay'`,
      );
      expect(schedule).toEqual({ cron: '* * * * *', timezone: 'UTC' });
    });
  });

  it("the API guide's receiver verifies a real delivery", async () => {
    const guide = fs.readFileSync(path.join(__dirname, '..', 'docs', 'api-guide.md'), 'utf8');
    const snippet = /## Webhooks[\s\S]*?```js\n([\s\S]*?)```/.exec(guide)![1].replace(/^ {2}/gm, '');
    // The secret is the process's from the start, as in production; the webhook's URL comes once the port is known.
    const { id, secret } = await createWebhook({ url: 'http://127.0.0.1:9/', events: ['call.created'] });
    const child = spawn(
      process.execPath,
      ['-e', snippet.replace('.listen(8080)', '.listen(0, function () { process.stderr.write(`${this.address().port}\\n`); })')],
      {
        cwd: path.join(__dirname, '..'),
        env: { ...process.env, WEBHOOK_SECRET: secret },
      },
    );
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    const port = await new Promise<number>((resolve) => child.stderr.once('data', (chunk) => resolve(Number(String(chunk).trim()))));
    try {
      await suite.context
        .as(suite.account)
        .patch(`/webhooks/${id}`)
        .send({ url: `http://127.0.0.1:${port}/` })
        .expect(200);
      const call = (await suite.context.as(suite.account).post('/calls').send(CALL).expect(201)).body;
      await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.status === 'succeeded',
      );
      expect(output).toBe(`call.created ${call.id}\n`);
      // A delivery signed with another secret is refused.
      const forger = new StandardWebhook(generateWebhookSecret());
      const body = JSON.stringify({ id: 'evt_forged', type: 'call.created', createdAt: new Date().toISOString(), data: call });
      const headers = {
        'webhook-id': 'evt_forged',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': forger.sign('evt_forged', new Date(), body),
      };
      expect((await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers, body })).status).toBe(400);
      expect(output).toBe(`call.created ${call.id}\n`);
    } finally {
      child.kill();
    }
  });

  describe('delivery', () => {
    it('retries a receiver that answers 500 twice then 200: three attempts, one webhook-id, and the log shows each step', async () => {
      suite.receiver.respond = (_delivery, index) =>
        index < 2 ? { status: 500, body: 'database\u0000 down\n\tretry later' } : { status: 200 };
      const { id } = await createWebhook({ events: ['call.created'] });
      await suite.context.as(suite.account).post('/calls').send(CALL).expect(201);
      await suite.receiver.waitFor(1);
      const [afterFirst] = await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.attempts === 1,
      );
      expect(afterFirst).toMatchObject({
        status: 'pending',
        lastStatusCode: 500,
        lastError: 'HTTP 500: database down retry later',
        nextAttemptAt: expect.any(String),
      });
      const received = await suite.receiver.waitFor(3);
      const [row] = await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.status === 'succeeded',
      );
      expect(row).toMatchObject({ attempts: 3, lastStatusCode: 200, lastError: null, nextAttemptAt: null });
      expect(new Set(received.map((delivery) => delivery.headers['webhook-id'])).size).toBe(1);
      expect(new Set(received.map((delivery) => delivery.body)).size).toBe(1);
      expect(received).toHaveLength(3);
    });

    it('fails a delivery once the retry delays are used up, keeping only a short excerpt of the answer', async () => {
      suite.receiver.respond = () => ({ status: 502, body: `<html>${'x'.repeat(100_000)}</html>` });
      const { id } = await createWebhook();
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      const [row] = await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.status === 'failed',
      );
      expect(row).toMatchObject({ attempts: 3, lastStatusCode: 502, nextAttemptAt: null });
      expect((row.lastError as string).length).toBeLessThanOrEqual(220);
      expect(row.lastError).toMatch(/^HTTP 502: <html>x+…$/);
      expect(suite.receiver.deliveries).toHaveLength(3);
    });

    it('disables the webhook when the receiver answers 410 Gone, and cancels its other pending deliveries', async () => {
      suite.receiver.respond = (_delivery, index) => (index === 0 ? { status: 503 } : { status: 410 });
      const { id } = await createWebhook();
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.attempts === 1,
      );
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      const rows = await eventually(
        () => deliveries(id),
        (list) => list.length === 2 && list.every((row) => row.status === 'failed'),
      );
      expect(rows[0]).toMatchObject({ lastStatusCode: 410, lastError: 'HTTP 410 (the webhook was disabled)' });
      expect(rows[1]).toMatchObject({ attempts: 1, lastError: expect.stringContaining('410 Gone') });
      expect((await suite.context.as(suite.account).get(`/webhooks/${id}`).expect(200)).body.enabled).toBe(false);
      await suite.context.as(suite.account).post('/calls').send(CALL).expect(201);
      expect(await deliveries(id)).toHaveLength(2);
    });

    it('retries by hand: a failed delivery is attempted again with the same webhook-id, and a succeeded one replayed', async () => {
      suite.receiver.respond = () => ({ status: 500 });
      const { id } = await createWebhook();
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      const [failed] = await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.status === 'failed',
      );
      suite.receiver.respond = answerOk;
      const retried = (await suite.context.as(suite.account).post(`/webhooks/${id}/deliveries/${failed.id}/retry`).expect(202)).body;
      expect(retried).toMatchObject({ id: failed.id, status: 'pending', attempts: 3 });
      const [done] = await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.status === 'succeeded',
      );
      expect(done).toMatchObject({ attempts: 4, lastStatusCode: 204 });
      await suite.context.as(suite.account).post(`/webhooks/${id}/deliveries/${failed.id}/retry`).expect(202);
      await suite.receiver.waitFor(5);
      expect(new Set(suite.receiver.deliveries.map((delivery) => delivery.headers['webhook-id'])).size).toBe(1);
      await suite.context.as(suite.account).post(`/webhooks/${id}/deliveries/7d1e0f4a-2b3c-4d5e-8f9a-0b1c2d3e4f5a/retry`).expect(404);
      await suite.context.as(suite.account).post(`/webhooks/${id}/deliveries/not-a-uuid/retry`).expect(404);
    });

    it('signs with both secrets for 24 hours after a rotation, then with the new one only', async () => {
      const { id, secret: oldSecret } = await createWebhook();
      const rotatedAt = Date.now();
      const { secret: newSecret } = (await suite.context.as(suite.account).post(`/webhooks/${id}/rotate-secret`).expect(200)).body;
      expect(newSecret).toMatch(/^whsec_/);
      const [{ expiresAt }] = await suite.context.app
        .get(DataSource)
        .query(`SELECT previous_secret_expires_at AS "expiresAt" FROM webhooks WHERE account_id = $1 AND id = $2`, [suite.account.id, id]);
      expect(expiresAt.getTime() - rotatedAt).toBeGreaterThanOrEqual(24 * 3600_000); // 24 hours from the rotation
      expect(expiresAt.getTime() - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
      expect(newSecret).not.toBe(oldSecret);
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      const [during] = await suite.receiver.waitFor(1);
      expect((during.headers['webhook-signature'] as string).split(' ')).toHaveLength(2);
      expect(verified(newSecret, during).type).toBe('ping');
      expect(verified(oldSecret, during).type).toBe('ping');

      // 24 hours later (the overlap is moved into the past rather than waited for).
      await suite.context.app
        .get(DataSource)
        .query(`UPDATE webhooks SET previous_secret_expires_at = now() - interval '1 second' WHERE account_id = $1 AND id = $2`, [
          suite.account.id,
          id,
        ]);
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      const after = (await suite.receiver.waitFor(2))[1];
      expect((after.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
      expect(verified(newSecret, after).type).toBe('ping');
      expect(() => verified(oldSecret, after)).toThrow('No matching signature');
    });

    it('gives a receiver that hangs one attempt of WEBHOOK_TIMEOUT_MS, before or after its headers', async () => {
      const server = await startReceiver();
      const http = await import('node:http');
      // Headers sent, then the body never finishes.
      const halfAnswer = http.createServer((_request, response) => {
        response.writeHead(200, { 'content-length': '100' });
        response.write('partial');
      });
      await listenOnLoopback(halfAnswer);
      server.respond = () => 'hang';
      try {
        const hanging = await createWebhook({ url: server.url() });
        const half = await createWebhook({ url: `http://127.0.0.1:${(halfAnswer.address() as { port: number }).port}/` });
        await suite.context.as(suite.account).post(`/webhooks/${hanging.id}/test`).expect(202);
        await suite.context.as(suite.account).post(`/webhooks/${half.id}/test`).expect(202);
        for (const webhook of [hanging, half]) {
          const [row] = await eventually(
            () => deliveries(webhook.id),
            (rows) => rows[0]?.attempts === 1,
          );
          expect(row).toMatchObject({ status: 'pending', lastStatusCode: null, lastError: 'no complete answer within 2 s' });
        }
      } finally {
        halfAnswer.closeAllConnections();
        halfAnswer.close();
        await server.close();
      }
    });

    it('records a refused connection as a failed attempt and retries it', async () => {
      const gone = await startReceiver();
      const url = gone.url();
      await gone.close();
      const { id } = await createWebhook({ url });
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      const [row] = await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.attempts === 1,
      );
      expect(row).toMatchObject({ status: 'pending', lastStatusCode: null, lastError: expect.stringContaining('connection refused') });
    });

    it('cancels the pending deliveries of a webhook that is disabled', async () => {
      suite.receiver.respond = () => ({ status: 500 });
      const { id } = await createWebhook();
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.attempts === 1,
      );
      await suite.context.as(suite.account).patch(`/webhooks/${id}`).send({ enabled: false }).expect(200);
      const [row] = await deliveries(id);
      expect(row).toMatchObject({ status: 'failed', nextAttemptAt: null, lastError: 'Not delivered: the webhook was disabled' });
    });

    it('keeps a delivery cancelled while its attempt was in flight cancelled: the attempt counts, and is not retried', async () => {
      suite.receiver.respond = () => 'hang'; // the attempt ends at WEBHOOK_TIMEOUT_MS, a failure that would be retried
      const { id } = await createWebhook();
      const ping = (await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202)).body;
      await eventually(
        async () => suite.receiver.deliveries.length,
        (count) => count === 1,
      );
      await suite.context.as(suite.account).patch(`/webhooks/${id}`).send({ enabled: false }).expect(200);
      // The PATCH came while the attempt was in flight (its outcome, at WEBHOOK_TIMEOUT_MS, is not recorded yet).
      const [inFlight] = await deliveries(id);
      expect(inFlight).toMatchObject({ status: 'failed', attempts: 0 });
      const [row] = await eventually(
        () => deliveries(id),
        (rows) => rows[0]?.attempts === 1,
      );
      expect(row).toMatchObject({ status: 'failed', nextAttemptAt: null, lastError: 'Not delivered: the webhook was disabled' });
      await jobsSettled(ping.id);
      expect(await deliveries(id)).toEqual([row]);
      expect(suite.receiver.deliveries).toHaveLength(1);
    });
  });

  describe('retention', () => {
    const database = () => suite.context.app.get(DataSource);
    /** Moves the call's event back in time, as if it had been created that long ago. */
    const age = (callId: string, interval: string) =>
      database().query(`UPDATE webhook_events SET created_at = now() - $2::interval WHERE account_id = $1 AND call_id = $3`, [
        suite.account.id,
        interval,
        callId,
      ]);
    const eventCount = (callIds: string[]) =>
      database()
        .query(`SELECT count(*)::int AS n FROM webhook_events WHERE account_id = $1 AND call_id = ANY ($2)`, [suite.account.id, callIds])
        .then((rows: { n: number }[]) => rows[0].n);

    it('is an hourly job', async () => {
      const rows = await database().query(
        `SELECT cron, timezone FROM ${suite.context.config.jobQueueSchema}.schedule WHERE name = 'webhooks.prune-events'`,
      );
      expect(rows).toEqual([{ cron: '17 * * * *', timezone: 'UTC' }]);
    });

    it('deletes events older than WEBHOOK_RETENTION_DAYS with their deliveries, but not while one is pending', async () => {
      const { id } = await createWebhook({ events: ['call.created'] });
      const calls: string[] = [];
      for (let index = 0; index < 4; index++)
        calls.push((await suite.context.as(suite.account).post('/calls').send(CALL).expect(201)).body.id);
      await eventually(
        () => deliveries(id),
        (rows) => rows.length === 4 && rows.every((row) => row.status === 'succeeded'),
      );
      const [expired, pending, kept] = calls;
      await age(expired, '30 days 1 minute');
      await age(pending, '30 days 1 minute');
      await age(kept, '29 days 23 hours 59 minutes');
      // A retry of the pending one is scheduled for later.
      await database().query(
        `UPDATE webhook_deliveries SET status = 'pending' WHERE account_id = $1 AND event_id = (SELECT id FROM webhook_events WHERE account_id = $1 AND call_id = $2)`,
        [suite.account.id, pending],
      );

      expect(await suite.context.app.get(WebhookRetention).prune()).toBe(1);
      expect(await eventCount(calls)).toBe(3);
      const remaining = await deliveries(id);
      expect(remaining).toHaveLength(3);
      expect(await eventCount([expired])).toBe(0);

      await database().query(`UPDATE webhook_deliveries SET status = 'failed' WHERE account_id = $1 AND status = 'pending'`, [
        suite.account.id,
      ]);
      expect(await suite.context.app.get(WebhookRetention).prune()).toBe(1);
      expect(await eventCount(calls)).toBe(2);
      expect(await deliveries(id)).toHaveLength(2);
      expect(await suite.context.app.get(WebhookRetention).prune()).toBe(0);
    });
  });
});

describe('webhook targets (SSRF)', () => {
  const suite = webhookSuite({ allowPrivateTargets: false });

  it.each([
    ['http', 'http://hooks.example.com/'],
    ['loopback', 'https://127.0.0.1/hooks'],
    ['loopback in another spelling', 'https://2130706433/hooks'],
    ['IPv6 loopback', 'https://[::1]/hooks'],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hooks'],
    ['private', 'https://10.1.2.3/hooks'],
    ['link-local', 'https://169.254.1.1/hooks'],
    ['metadata', 'https://169.254.169.254/hooks'],
    ['localhost', 'https://localhost/hooks'],
  ])('refuses a %s target with a 400', async (_case, url) => {
    const response = await suite.context
      .as(suite.account)
      .post('/webhooks')
      .send({ url, events: ['call.created'] })
      .expect(400);
    expect(response.body.details).toEqual([{ field: 'url', message: expect.stringMatching(/^url must/) }]);
  });

  it('refuses at delivery a name that resolves to a loopback address then, though it resolved to a public one when saved', async () => {
    const targets = suite.context.app.get(WebhookTargets);
    let answer = '93.184.216.34';
    targets.resolver = async () => [{ address: answer, family: 4 }];
    try {
      const { id } = await suite.createWebhook({ url: `https://hooks.example.com:${suite.receiver.port}/`, events: ['call.created'] });
      answer = '127.0.0.1';
      await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
      const [row] = await eventually(
        () => suite.deliveries(id),
        (rows) => rows[0]?.attempts === 1,
      );
      expect(row).toMatchObject({ status: 'pending', lastStatusCode: null, lastError: 'hooks.example.com resolves to a loopback address' });
      expect(suite.receiver.connections).toBe(0);
    } finally {
      targets.resolver = undefined;
    }
  });
});

describe('webhook relay at shutdown', () => {
  it('queues the relay of an event committed just before the application stops, before its job queue stops', async () => {
    const context = await createTestContext(webhooksConfig());
    let closed = false;
    try {
      const account = await context.createAccount();
      await context
        .as(account)
        .post('/webhooks')
        .send({ url: 'http://127.0.0.1:9/', events: ['call.created'] })
        .expect(201);
      const dataSource = context.app.get(DataSource);
      const [{ now }] = await dataSource.query(`SELECT clock_timestamp() AS now`);
      await context.as(account).post('/calls').send(CALL).expect(201);
      // Closed at once: the relay job, due 20 ms after the commit, is queued while stopping.
      const jobs = `SELECT count(*)::int AS n FROM ${context.config.jobQueueSchema}.job WHERE name = 'webhooks.relay' AND created_on > $1`;
      const database = new Client({ connectionString: process.env.DATABASE_URL });
      await context.close();
      closed = true;
      await database.connect();
      try {
        // (The minute's relay may have been queued meanwhile too.)
        expect((await database.query(jobs, [now])).rows[0].n).toBeGreaterThanOrEqual(1);
      } finally {
        await database.end();
      }
    } finally {
      if (!closed) await context.close();
    }
  });
});

describe('webhook retry schedule (WEBHOOK_RETRY_SECONDS=1,3)', () => {
  const suite = webhookSuite({ retrySeconds: [1, 3] }, () => ({ status: 503 }));

  it('waits each delay of the list in turn before the next attempt, then fails the delivery', async () => {
    const { id } = await suite.createWebhook({ events: ['call.created'] });
    await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202);
    const rows = () => suite.deliveries(id);
    const receivedAt = (index: number) => suite.receiver.deliveries[index].receivedAtMs;

    await suite.receiver.waitFor(1);
    const [afterFirst] = await eventually(rows, (list) => list[0]?.attempts === 1);
    const firstDelay = Date.parse(afterFirst.nextAttemptAt!) - receivedAt(0);
    await suite.receiver.waitFor(2, 10_000);
    const [afterSecond] = await eventually(rows, (list) => list[0]?.attempts === 2);
    const secondDelay = Date.parse(afterSecond.nextAttemptAt!) - receivedAt(1);
    // Each next attempt is due its delay after the answer that failed (never earlier), and is not made before it is due.
    expect(firstDelay).toBeGreaterThanOrEqual(1_000);
    expect(firstDelay).toBeLessThan(3_000);
    expect(secondDelay).toBeGreaterThanOrEqual(3_000);
    expect(receivedAt(1)).toBeGreaterThanOrEqual(Date.parse(afterFirst.nextAttemptAt!));
    await suite.receiver.waitFor(3, 15_000);
    expect(receivedAt(2)).toBeGreaterThanOrEqual(Date.parse(afterSecond.nextAttemptAt!));
    const [last] = await eventually(rows, (list) => list[0]?.status === 'failed');
    expect(last).toMatchObject({ attempts: 3, nextAttemptAt: null });
  }, 30_000);
});

describe('webhook retry by hand while an attempt is in flight (WEBHOOK_RETRY_SECONDS=3600,3600)', () => {
  // Retry delays far beyond the test's timeout: only an attempt made at once can reach the receiver in time.
  const suite = webhookSuite({ retrySeconds: [3600, 3600], timeoutMs: 5_000 });
  const { deliveries } = suite;
  /** A ping whose first attempt the receiver holds, answered `first` once `release` is called; later attempts get 204. */
  const heldPing = async (first: number) => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    suite.receiver.respond = (_delivery, index) => (index === 0 ? released.then(() => ({ status: first })) : { status: 204 });
    const { id } = await suite.createWebhook({ events: ['call.created'] });
    const ping = (await suite.context.as(suite.account).post(`/webhooks/${id}/test`).expect(202)).body;
    await suite.receiver.waitFor(1); // the first attempt is in flight
    return { webhookId: id, deliveryId: ping.id as string, release };
  };

  it.each([
    ['fails (500), whose own retry would come an hour later', 500],
    ['succeeds (204), after which nothing else was due', 204],
  ])('attempts again right after the attempt in flight ends, when that attempt %s', async (_, status) => {
    const { webhookId, deliveryId, release } = await heldPing(status);
    const retried = (await suite.context.as(suite.account).post(`/webhooks/${webhookId}/deliveries/${deliveryId}/retry`).expect(202)).body;
    expect(retried).toMatchObject({ status: 'pending', attempts: 0 });
    release();
    const [first, second] = await suite.receiver.waitFor(2, 15_000);
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    // Asked for once, attempted once more: the second attempt answered the request, and nothing else is due.
    const [row] = await eventually(
      () => deliveries(webhookId),
      (rows) => rows[0]?.attempts === 2,
    );
    expect(row).toMatchObject({ status: 'succeeded', lastStatusCode: 204, nextAttemptAt: null });
  });

  it('does not attempt again after an attempt in flight that got 410 Gone (the webhook is disabled), though a retry was asked for', async () => {
    const { webhookId, deliveryId, release } = await heldPing(410);
    await suite.context.as(suite.account).post(`/webhooks/${webhookId}/deliveries/${deliveryId}/retry`).expect(202);
    release();
    const [row] = await eventually(
      () => deliveries(webhookId),
      (rows) => rows[0]?.attempts === 1,
    );
    // Failed for good (no job can take a failed delivery): the retry asked for is not made.
    expect(row).toMatchObject({ status: 'failed', lastStatusCode: 410, nextAttemptAt: null });
    expect((await suite.context.as(suite.account).get(`/webhooks/${webhookId}`).expect(200)).body.enabled).toBe(false);
    expect(suite.receiver.deliveries).toHaveLength(1);
  });
});
