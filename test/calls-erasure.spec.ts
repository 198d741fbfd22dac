import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { RecordingStorage } from '../src/recordings/recording-storage';
import { binaryBody, createListeningTestContext, TestAccount, TestContext } from './helpers';
import { chunks, localTestStorage, rawRequest, s3TestStorage, TestStorage } from './recordings-helpers';

const MP3 = { 'Content-Type': 'audio/mpeg' };

describe.each([
  ['local', () => localTestStorage()],
  ['s3', () => s3TestStorage()],
])('DELETE /calls/{callId} (%s storage)', (_driver, makeStorage) => {
  let storage: TestStorage;
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;

  beforeAll(async () => {
    storage = await makeStorage();
    ({ context, baseUrl } = await createListeningTestContext(storage.config));
    owner = await context.createAccount();
  });
  afterAll(async () => {
    await context.close();
    await storage.stop();
  });

  const createCall = async (account = owner): Promise<string> =>
    (
      await context
        .as(account)
        .post('/calls')
        .send({ name: 'Priya Sharma', transcript: [{ speaker: 'user', text: 'मेरा नंबर लिख लीजिए' }] })
        .expect(201)
    ).body.id;
  const upload = (callId: string, body: Buffer) => context.as(owner).put(`/calls/${callId}/recording`).set(MP3).send(body).expect(204);
  const row = async (callId: string) =>
    (
      await context.app.get(DataSource).query('SELECT recording_key AS "recordingKey", transcript FROM calls WHERE id = $1', [callId])
    )[0] as { recordingKey: string | null; transcript: unknown[] } | undefined;
  const objectExists = async (key: string) => (await context.app.get(RecordingStorage).size(key)) !== undefined;

  it('erases the call, its transcript and its recording: 204, then 404 everywhere', async () => {
    const callId = await createCall();
    await upload(callId, randomBytes(2000));
    const { recordingKey } = (await row(callId))!;
    expect(await objectExists(recordingKey!)).toBe(true);
    const response = await context.as(owner).delete(`/calls/${callId}`).expect(204);
    expect(response.text).toBe('');
    expect(await row(callId)).toBeUndefined();
    expect(await objectExists(recordingKey!)).toBe(false);
    await context.as(owner).get(`/calls/${callId}`).expect(404);
    await context.as(owner).get(`/calls/${callId}/recording`).expect(404);
    await context.as(owner).get(`/calls/${callId}/recording/download`).expect(404);
    expect((await context.as(owner).get('/calls?limit=1000').expect(200)).body.map((call: { id: string }) => call.id)).not.toContain(
      callId,
    );
  });

  it('erases a call without a recording, and a second DELETE is a 404', async () => {
    const callId = await createCall();
    await context.as(owner).delete(`/calls/${callId}`).expect(204);
    const again = await context.as(owner).delete(`/calls/${callId}`).expect(404);
    expect(again.body).toEqual({ statusCode: 404, error: 'Not Found', message: `Call ${callId} not found` });
  });

  it("answers 404 to another account and keeps the owner's call and recording", async () => {
    const callId = await createCall();
    await upload(callId, Buffer.from('private audio'));
    const intruder = await context.createAccount();
    await context.as(intruder).delete(`/calls/${callId}`).expect(404);
    await context.as(intruder).delete(`/calls/${callId.toUpperCase()}`).expect(404);
    const { recordingKey } = (await row(callId))!;
    expect(await objectExists(recordingKey!)).toBe(true);
    expect((await context.as(owner).get(`/calls/${callId}`).expect(200)).body.hasRecording).toBe(true);
  });

  it('answers 404 to ids that are not UUIDs, and does not take /calls/export for an id', async () => {
    for (const id of ['abc', '123', 'export']) await context.as(owner).delete(`/calls/${id}`).expect(404);
  });

  it('answers 503 when storage is unreachable and deletes nothing; a retry once it is back erases', async () => {
    const callId = await createCall();
    const audio = randomBytes(3000);
    await upload(callId, audio);
    const before = await row(callId);
    await storage.fail();
    try {
      const response = await context.as(owner).delete(`/calls/${callId}`).expect(503);
      expect(response.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'Recording storage is unavailable; try again shortly',
      });
    } finally {
      await storage.recover();
    }
    expect(await row(callId)).toEqual(before);
    const download = await context.as(owner).get(`/calls/${callId}/recording/download`).buffer(true).parse(binaryBody).expect(200);
    expect(Buffer.compare(download.body, audio)).toBe(0);
    await context.as(owner).delete(`/calls/${callId}`).expect(204);
    expect(await row(callId)).toBeUndefined();
    expect(await objectExists(before!.recordingKey!)).toBe(false);
  }, 60_000);

  describe('racing an upload to the same call (the row lock decides; no object is ever orphaned)', () => {
    let locker: Client;

    beforeEach(async () => {
      locker = new Client({ connectionString: process.env.DATABASE_URL });
      await locker.connect();
    });
    afterEach(() => locker.end());

    /**
     * Backends waiting, directly or behind another waiter, for the row lock the test's transaction holds.
     * (Inside a transaction, pg_stat_activity is read once and kept: the snapshot is cleared first.)
     */
    const waiting = async () => {
      await locker.query('SELECT pg_stat_clear_snapshot()');
      return Number(
        (
          await locker.query(
            `WITH RECURSIVE blocked(pid) AS (
               SELECT pid FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))
               UNION
               SELECT activity.pid FROM pg_stat_activity activity JOIN blocked ON blocked.pid = ANY(pg_blocking_pids(activity.pid))
             )
             SELECT count(*) AS n FROM blocked`,
          )
        ).rows[0].n,
      );
    };
    const untilWaiting = async (count: number) => {
      while ((await waiting()) < count) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };

    /** Locks the call's row in a transaction of the test's own, runs `queue` (requests that will wait on it), then lets them go. */
    async function withRowLocked<T>(callId: string, queue: () => Promise<T>): Promise<T> {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM calls WHERE id = $1 FOR UPDATE', [callId]);
      try {
        return await queue();
      } finally {
        await locker.query('COMMIT');
      }
    }

    const uploadRaw = (callId: string) =>
      rawRequest(`${baseUrl}/calls/${callId}/recording`, 'PUT', { 'X-Api-Key': owner.apiKey, ...MP3 }, chunks(4));

    it('an upload whose key swap waits first is committed, then erased with the call', async () => {
      const callId = await createCall();
      await upload(callId, Buffer.from('an earlier recording'));
      const objectsBefore = await storage.objects();
      const [uploaded, erased] = await withRowLocked(callId, async () => {
        const uploading = uploadRaw(callId);
        await untilWaiting(1);
        const erasing = context
          .as(owner)
          .delete(`/calls/${callId}`)
          .then((response) => response);
        await untilWaiting(2);
        return [uploading, erasing] as const;
      }).then(([uploading, erasing]) => Promise.all([uploading, erasing]));
      expect(uploaded.status).toBe(204);
      expect(erased.status).toBe(204);
      expect(await row(callId)).toBeUndefined();
      // The earlier recording (replaced by the upload) and the upload's own object are both gone.
      expect((await storage.objects()).length).toBe(objectsBefore.length - 1);
    });

    it('an upload whose key swap comes after the erasure finds no call: 404, and its new object is removed', async () => {
      const callId = await createCall();
      await upload(callId, Buffer.from('an earlier recording'));
      const objectsBefore = await storage.objects();
      const [erased, uploaded] = await withRowLocked(callId, async () => {
        const erasing = context
          .as(owner)
          .delete(`/calls/${callId}`)
          .then((response) => response);
        await untilWaiting(1);
        const uploading = uploadRaw(callId);
        await untilWaiting(2);
        return [erasing, uploading] as const;
      }).then(([erasing, uploading]) => Promise.all([erasing, uploading]));
      expect(erased.status).toBe(204);
      expect(uploaded.status).toBe(404);
      expect(await row(callId)).toBeUndefined();
      expect((await storage.objects()).length).toBe(objectsBefore.length - 1);
    });
  });
});
