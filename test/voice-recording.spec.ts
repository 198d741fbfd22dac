import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, constants, createReadStream, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { VOICE_SAMPLE_RATE } from '../src/voice/voice-format';
import { VoiceLeasesRepository } from '../src/voice/voice-leases.repository';
import { BLOCK_SAMPLES, CallRecorder, CallRecordings, SpooledRecorder } from '../src/voice/recording/call-recorder';
import {
  MAX_BLOCKS_IN_FLIGHT,
  MAX_BLOCKS_PER_SPOOL,
  Mp3Encoding,
  mp3BytesPerSecond,
  RecordingSampleRate,
  SPOOLS_PER_THREAD,
} from '../src/voice/recording/mp3-encoding';
import { JOB_ASSEMBLE } from '../src/voice/recording/recording-assembly';
import { bearer, capturedLogger, startConversation } from './conversation-helpers';
import { binaryBody, createTestContext, eventually, TestAccount, TestContext } from './helpers';
import { localTestStorage, TestStorage } from './recordings-helpers';
import { threadsAtNiceness } from './support/threads';
import { decodeMp3, DecodedMp3, levelDbfs } from './support/voice-audio';
import { Receiver, startReceiver } from './webhook-receiver';

/**
 * The spoken call's recording (contract section 15), below the socket: CallRecordings as the voice pipeline
 * uses it, the real MP3 encoder in its worker, the parts in PostgreSQL and the local storage, the assembly job,
 * and the call's recording routes. A "socket" here is what the pipeline does around a recorder: the
 * conversation's voice lease held from before the recorder opens until after it has closed.
 */

const FRAME = VOICE_SAMPLE_RATE / 50; // 20 ms, as the pipeline writes
const LOUD = -20; // dBFS: a tone at 0.3 of full scale is about -13.5
const QUIET = -60;
/**
 * The decoded MP3 is longer than its timeline by the encoder's delay and padding: about 84 ms a part at 16 kHz, and
 * 164 ms at 8 kHz, whose frames last twice as long.
 */
const PART_PADDING = 0.1;
const PADDING_AT: Record<RecordingSampleRate, number> = { 16_000: PART_PADDING, 8_000: 0.2 };

type Channel = Int16Array;

function tone(hz: number, seconds: number): Channel {
  const samples = new Int16Array(Math.round(seconds * VOICE_SAMPLE_RATE));
  for (let index = 0; index < samples.length; index++) {
    samples[index] = Math.round(0.3 * 32767 * Math.sin((2 * Math.PI * hz * index) / VOICE_SAMPLE_RATE));
  }
  return samples;
}

const silence = (seconds: number): Channel => new Int16Array(Math.round(seconds * VOICE_SAMPLE_RATE));

function joined(...stretches: Channel[]): Channel {
  const all = new Int16Array(stretches.reduce((sum, stretch) => sum + stretch.length, 0));
  let offset = 0;
  for (const stretch of stretches) {
    all.set(stretch, offset);
    offset += stretch.length;
  }
  return all;
}

/** Writes the timeline as the pipeline does: one 20 ms frame of each side per tick. */
function writeTimeline(recorder: CallRecorder, left: Channel, right: Channel): void {
  expect(left.length).toBe(right.length);
  for (let offset = 0; offset < left.length; offset += FRAME) {
    recorder.write(left.subarray(offset, offset + FRAME), right.subarray(offset, offset + FRAME));
  }
}

describe('the spoken call recording', () => {
  let storage: TestStorage;
  let context: TestContext;
  let receiver: Receiver;
  let owner: TestAccount;
  let agentId: number;
  let database: DataSource;
  const log = capturedLogger();

  beforeAll(async () => {
    storage = await localTestStorage();
    receiver = await startReceiver();
    context = await createTestContext(
      {
        ...storage.config,
        widgetRateLimit: 10_000,
        webhooks: { allowPrivateTargets: true, timeoutMs: 2_000, retrySeconds: [1], retentionDays: 30 },
      },
      { logger: log.logger },
    );
    database = context.app.get(DataSource);
    owner = await context.createAccount();
    agentId = (await context.as(owner).post('/agents').send({ name: 'Reception', language: 'en-IN' }).expect(201)).body.id;
    await context
      .as(owner)
      .post('/webhooks')
      .send({ url: receiver.url(), events: ['call.recording.ready'] })
      .expect(201);
  });
  afterAll(async () => {
    await context?.close();
    await receiver?.close();
    await storage?.stop();
  });

  /** A conversation in which the visitor said something (so that ending it makes a call). */
  async function conversation(account = owner, agent = agentId, ctx = context): Promise<{ conversationId: string; token: string }> {
    const started = await startConversation(ctx, account, agent, { test: false });
    await ctx.http
      .post(`/conversations/${started.conversationId}/messages`)
      .set(bearer(started.token))
      .send({ text: 'Hello, can you hear me?' })
      .expect(200);
    return started;
  }

  /** One socket of the conversation: the lease held around the recorder; its clock (seconds) at open and at close. */
  async function socket(
    ctx: TestContext,
    accountId: number,
    conversationId: string,
    left: Channel,
    right: Channel,
    rate: RecordingSampleRate = 16_000,
  ) {
    const leases = ctx.app.get(VoiceLeasesRepository);
    const leaseId = randomUUID();
    expect(await leases.take(accountId, conversationId, leaseId, 30)).toBe('taken');
    const recorder = await ctx.app.get(CallRecordings).open({ accountId, conversationId }, rate);
    const from = recorder.seconds;
    writeTimeline(recorder, left, right);
    const to = recorder.seconds;
    await recorder.close();
    await leases.release(accountId, conversationId, leaseId);
    return { from, to };
  }

  const end = (ctx: TestContext, started: { conversationId: string; token: string }) =>
    ctx.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);

  /** The fence: every assembly job of the conversation (at least one) has completed. */
  async function assembled(ctx: TestContext, conversationId: string): Promise<void> {
    await eventually(async () => {
      const [{ total, unsettled }] = await ctx.app.get(DataSource).query(
        `SELECT count(*)::int AS total, count(*) FILTER (WHERE state <> 'completed')::int AS unsettled
           FROM ${ctx.config.jobQueueSchema}.job WHERE name = $1 AND data->>'conversationId' = $2`,
        [JOB_ASSEMBLE, conversationId],
      );
      return total > 0 && unsettled === 0 ? true : undefined;
    });
  }

  async function download(ctx: TestContext, account: TestAccount, callId: string): Promise<Buffer> {
    const response = await ctx.as(account).get(`/calls/${callId}/recording/download`).buffer(true).parse(binaryBody).expect(200);
    expect(response.headers['content-type']).toBe('audio/mpeg');
    return response.body as Buffer;
  }

  const segments = (ctx: TestContext, conversationId: string) =>
    ctx.app
      .get(DataSource)
      .query(`SELECT seq, seconds FROM conversation_recording_segments WHERE conversation_id = $1 ORDER BY seq`, [conversationId]);

  const spools = async (ctx: TestContext) => readdir(path.join(ctx.config.dataDir, 'voice-spool')).catch(() => []);

  const level = (mp3: DecodedMp3, channel: 0 | 1, from: number, to: number) => levelDbfs(mp3.channels[channel], mp3.sampleRate, from, to);

  it('records the visitor left and the agent right, silence elsewhere, as the call recording that the call serves', async () => {
    const started = await conversation();
    // 0-1 s the visitor speaks (440 Hz), 1.5-2.5 s the agent answers (1 kHz), silence around.
    const left = joined(tone(440, 1), silence(2));
    const right = joined(silence(1.5), tone(1000, 1), silence(0.5));
    expect(await socket(context, owner.id, started.conversationId, left, right)).toEqual({ from: 0, to: 3 });
    expect(await segments(context, started.conversationId)).toEqual([{ seq: 1, seconds: 3 }]);
    expect(await spools(context)).toEqual([]);
    await end(context, started);
    await assembled(context, started.conversationId);

    const call = (await context.as(owner).get(`/calls/${started.conversationId}`).expect(200)).body;
    expect(call.hasRecording).toBe(true);
    const mp3 = await decodeMp3(await download(context, owner, started.conversationId));
    expect(mp3.sampleRate).toBe(16_000);
    expect(mp3.channels).toHaveLength(2);
    expect(Math.abs(mp3.seconds - 3)).toBeLessThanOrEqual(0.15);
    // Windows clear of the edges (the encoder shifts the audio by its delay, a few tens of ms).
    expect(level(mp3, 0, 0.2, 0.9)).toBeGreaterThan(LOUD);
    expect(level(mp3, 1, 0.2, 0.9)).toBeLessThan(QUIET);
    expect(level(mp3, 1, 1.7, 2.4)).toBeGreaterThan(LOUD);
    expect(level(mp3, 0, 1.7, 2.4)).toBeLessThan(QUIET);
    for (const channel of [0, 1] as const) {
      expect(level(mp3, channel, 1.2, 1.45)).toBeLessThan(QUIET);
      expect(level(mp3, channel, 2.75, 3)).toBeLessThan(QUIET);
    }

    // The signed URL plays the same bytes; the parts are gone, the recording is the only object stored.
    const { url } = (await context.as(owner).get(`/calls/${started.conversationId}/recording`).expect(200)).body;
    const played = await context.http
      .get(new URL(url).pathname + new URL(url).search)
      .buffer(true)
      .expect(200);
    expect(played.headers['content-type']).toBe('audio/mpeg');
    expect(await segments(context, started.conversationId)).toEqual([]);
    expect(await storage.objects()).toHaveLength(1);

    // call.recording.ready, delivered as an upload's is: the call as GET /calls/{id} shows it.
    const [delivery] = await receiver.waitFor(1);
    const event = JSON.parse(delivery.body);
    expect(event.type).toBe('call.recording.ready');
    expect(event.data).toEqual(call);

    // Another account sees neither the call nor its recording.
    const stranger = await context.createAccount();
    await context.as(stranger).get(`/calls/${started.conversationId}`).expect(404);
    await context.as(stranger).get(`/calls/${started.conversationId}/recording`).expect(404);
    await context.as(stranger).get(`/calls/${started.conversationId}/recording/download`).expect(404);
  });

  it('joins the parts of two sockets into one recording of their summed length, the second part after the first', async () => {
    const started = await conversation();
    expect(await socket(context, owner.id, started.conversationId, tone(440, 2), silence(2))).toEqual({ from: 0, to: 2 });
    // The second socket's clock starts where the first part ended.
    expect(await socket(context, owner.id, started.conversationId, silence(1.5), tone(1000, 1.5))).toEqual({ from: 2, to: 3.5 });
    expect(await segments(context, started.conversationId)).toEqual([
      { seq: 1, seconds: 2 },
      { seq: 2, seconds: 1.5 },
    ]);
    await end(context, started);
    await assembled(context, started.conversationId);

    const mp3 = await decodeMp3(await download(context, owner, started.conversationId));
    expect(mp3.channels).toHaveLength(2);
    expect(mp3.seconds).toBeGreaterThanOrEqual(3.5);
    expect(mp3.seconds).toBeLessThanOrEqual(3.5 + 2 * PART_PADDING);
    expect(level(mp3, 0, 0.2, 1.8)).toBeGreaterThan(LOUD);
    expect(level(mp3, 1, 0.2, 1.8)).toBeLessThan(QUIET);
    expect(level(mp3, 1, 2.4, 3.4)).toBeGreaterThan(LOUD);
    expect(level(mp3, 0, 2.4, 3.4)).toBeLessThan(QUIET);
    expect(await segments(context, started.conversationId)).toEqual([]);
  });

  it('waits for a socket still open when the conversation ends, and adds its part once it closes', async () => {
    const started = await conversation();
    const { conversationId } = started;
    const leases = context.app.get(VoiceLeasesRepository);
    const leaseId = randomUUID();
    expect(await leases.take(owner.id, conversationId, leaseId, 30)).toBe('taken');
    const recorder = await context.app.get(CallRecordings).open({ accountId: owner.id, conversationId });
    writeTimeline(recorder, tone(440, 1), silence(1));
    // Ended elsewhere (the end route) while the socket is open: the call exists, its recording waits for the part.
    await end(context, started);
    const jobs = () =>
      database.query(`SELECT state FROM ${context.config.jobQueueSchema}.job WHERE name = $1 AND data->>'conversationId' = $2`, [
        JOB_ASSEMBLE,
        conversationId,
      ]);
    // The job's first run finds the lease held and fails, to be retried.
    await eventually(async () => ((await jobs()).some((job: { state: string }) => job.state === 'retry') ? true : undefined));
    expect((await context.as(owner).get(`/calls/${conversationId}`).expect(200)).body.hasRecording).toBe(false);

    writeTimeline(recorder, silence(1), tone(1000, 1));
    await recorder.close();
    await leases.release(owner.id, conversationId, leaseId);
    await assembled(context, conversationId);
    const mp3 = await decodeMp3(await download(context, owner, conversationId));
    expect(Math.abs(mp3.seconds - 2)).toBeLessThanOrEqual(0.15);
    expect(level(mp3, 0, 0.2, 0.9)).toBeGreaterThan(LOUD);
    expect(level(mp3, 1, 1.2, 1.9)).toBeGreaterThan(LOUD);
  });

  it('keeps no audio of a conversation that ended without a call, and erases the parts with the call', async () => {
    // The visitor never said anything: no call, the part is deleted.
    const silent = await startConversation(context, owner, agentId);
    const before = await storage.objects();
    await socket(context, owner.id, silent.conversationId, silence(1), tone(1000, 1));
    expect(await storage.objects()).toHaveLength(before.length + 1);
    await end(context, silent);
    await assembled(context, silent.conversationId);
    expect(await segments(context, silent.conversationId)).toEqual([]);
    expect(await storage.objects()).toEqual(before);

    // The call erased before its recording was assembled (its socket still open): the parts go with it.
    const erased = await conversation();
    const leases = context.app.get(VoiceLeasesRepository);
    const leaseId = randomUUID();
    await socket(context, owner.id, erased.conversationId, tone(440, 1), silence(1));
    expect(await leases.take(owner.id, erased.conversationId, leaseId, 30)).toBe('taken');
    await end(context, erased);
    await context.as(owner).delete(`/calls/${erased.conversationId}`).expect(204);
    expect(await segments(context, erased.conversationId)).toEqual([]);
    expect(await storage.objects()).toEqual(before);
    await leases.release(owner.id, erased.conversationId, leaseId);
    await assembled(context, erased.conversationId);
    expect(await storage.objects()).toEqual(before);
  });

  it('loses only the parts in flight when the encoder thread dies, and goes on with a new one', async () => {
    const lost = await conversation();
    const recordings = context.app.get(CallRecordings);
    const recorder = await recordings.open({ accountId: owner.id, conversationId: lost.conversationId });
    writeTimeline(recorder, tone(440, 2), tone(1000, 2));
    await (recorder as SpooledRecorder).spool.caughtUp();
    await context.app.get(Mp3Encoding).onApplicationShutdown(); // the worker stops as a crash would stop it
    await recorder.close();
    expect(await segments(context, lost.conversationId)).toEqual([]);
    expect(await spools(context)).toEqual([]);
    const lossLine = log.lines.find((line) => line.includes('part of the recording was lost'));
    expect(lossLine).toBeDefined();
    expect(lossLine).not.toContain(lost.conversationId);

    const kept = await conversation();
    await socket(context, owner.id, kept.conversationId, tone(440, 1), silence(1));
    expect(await segments(context, kept.conversationId)).toEqual([{ seq: 1, seconds: 1 }]);
  });

  it('holds a block or three of audio whatever the length: an hour of silence as fast as the encoder goes', async () => {
    const started = await conversation();
    const recorder = await context.app.get(CallRecordings).open({ accountId: owner.id, conversationId: started.conversationId });
    expect(recorder).toBeInstanceOf(SpooledRecorder);
    const spooled = recorder as SpooledRecorder;
    const block = 2 * BLOCK_SAMPLES * Int16Array.BYTES_PER_ELEMENT;
    expect(spooled.heldBytes).toBe(block);
    const [spoolFile] = await spools(context);
    const frame = new Int16Array(FRAME);
    const clockStart = performance.now();
    let mostHeld = 0;
    // The main thread's array buffers, the most seen in each ten minutes (garbage comes and goes between collections).
    const arrayBuffers: number[] = [];
    const rss: number[] = [];
    for (let write = 1; write <= 180_000; write++) {
      spooled.write(frame, frame);
      // Every half second of audio (two blocks: the spares), the encoder catches up. A live call is paced by its clock
      // instead; written faster than the blocks come back, the recorder would make new ones, and this count garbage.
      if (write % 25 === 0) {
        await spooled.spool.caughtUp();
        mostHeld = Math.max(mostHeld, spooled.heldBytes);
        const tenMinutes = Math.floor((write - 1) / 30_000);
        arrayBuffers[tenMinutes] = Math.max(arrayBuffers[tenMinutes] ?? 0, process.memoryUsage().arrayBuffers);
        if (write % 15_000 === 0) rss.push(process.memoryUsage().rss);
      }
    }
    await spooled.spool.caughtUp();
    const elapsed = (performance.now() - clockStart) / 1000;
    const spoolBytes = (await stat(path.join(context.config.dataDir, 'voice-spool', spoolFile))).size;
    expect(spooled.seconds).toBe(3600);
    // The block being filled and the two spares the worker gave back: nothing grows with the call.
    expect(mostHeld).toBeLessThanOrEqual(3 * block);
    // The main thread keeps neither audio nor MP3: kept, the MP3 alone would add 24 MB from the first ten minutes to the last.
    expect(arrayBuffers[5] - arrayBuffers[0]).toBeLessThan(8 * 1024 * 1024);
    // Nor does the process (the encoder's thread included): its resident memory is as flat, give or take the collector.
    expect(Math.max(...rss.slice(-3)) - Math.max(...rss.slice(0, 3))).toBeLessThan(12 * 1024 * 1024);
    // 64 kbit/s: 28.8 MB for the hour, on disk (the encoder's last frames are flushed at close).
    expect(Math.abs(spoolBytes - 3600 * mp3BytesPerSecond(16_000))).toBeLessThan(4_096);
    await spooled.close();
    expect(await segments(context, started.conversationId)).toEqual([{ seq: 1, seconds: 3600 }]);
    const mib = (bytes: number) => (bytes / 1048576).toFixed(1);
    process.stderr.write(
      `[voice-recording] an hour of silence encoded in ${elapsed.toFixed(1)} s; spool ${spoolBytes} B; ` +
        `RSS every 5 min (MiB): ${rss.map(mib).join(' ')}; array buffers, most per 10 min (MiB): ${arrayBuffers.map(mib).join(' ')}\n`,
    );
  }, 180_000);

  describe('with the encoder held up', () => {
    /**
     * Spool files that are one FIFO nobody reads, filled beforehand: the encoder thread's first write of MP3 blocks
     * in it, as a thread far behind would be, until the test reads the FIFO.
     */
    let directory: string;
    let fifo: string;
    let filler: number;
    let writer: number;
    let junk: number;
    let mp3: Mp3Encoding;

    beforeEach(() => {
      directory = mkdtempSync(path.join(os.tmpdir(), 'voice-held-encoder-'));
      fifo = path.join(directory, 'spool');
      execFileSync('mkfifo', [fifo]);
      // Read-write, so that opening it does not wait for a reader; non-blocking, to fill the pipe to the brim.
      filler = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
      junk = 0;
      for (;;) {
        try {
          junk += writeSync(filler, Buffer.alloc(4096));
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
          throw error;
        }
      }
      writer = openSync(fifo, constants.O_WRONLY); // blocking: the encoder's writes wait for room
      mp3 = new Mp3Encoding();
    });
    afterEach(async () => {
      await mp3.onApplicationShutdown();
      rmSync(directory, { recursive: true, force: true });
    });

    /** Reads the FIFO to its end (every writer closed): the junk, then the MP3 the encoder could write at last. */
    const drain = (): Promise<Buffer> =>
      new Promise((resolve, reject) => {
        const parts: Buffer[] = [];
        createReadStream(fifo)
          .on('data', (part) => parts.push(part as Buffer))
          .on('end', () => resolve(Buffer.concat(parts)))
          .on('error', reject);
      });

    /** A recorder on the held spool, as CallRecordings makes one; its part as it closed. */
    function heldRecorder() {
      let part: { seconds: number; bytes: number; droppedSeconds: number } | undefined;
      const recorder = new SpooledRecorder(mp3.open(writer), 0, Number.POSITIVE_INFINITY, async (closing) => {
        part = await closing;
      });
      return { recorder, part: () => part };
    }

    it('keeps at most MAX_BLOCKS_PER_SPOOL of a recording waiting; beyond, drops both sides, counted, the part being what was kept', async () => {
      const { recorder, part } = heldRecorder();
      const seconds = 40; // longer than the bound (32 s)
      const left = tone(440, seconds);
      const right = tone(1000, seconds);
      let mostBacklog = 0;
      for (let offset = 0; offset < left.length; offset += FRAME) {
        recorder.write(left.subarray(offset, offset + FRAME), right.subarray(offset, offset + FRAME));
        mostBacklog = Math.max(mostBacklog, recorder.spool.backlog);
        // The event loop turns now and then, so that a block the encoder gave back would be seen.
        if (offset % (50 * FRAME) === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      expect(mostBacklog).toBe(MAX_BLOCKS_PER_SPOOL);
      expect(mp3.blocksInFlight).toBe(MAX_BLOCKS_PER_SPOOL);
      // The recorder holds its block and spares only: what waits is the encoder's, and bounded.
      expect(recorder.heldBytes).toBeLessThanOrEqual(3 * 2 * BLOCK_SAMPLES * Int16Array.BYTES_PER_ELEMENT);
      // Kept: the bound's 32 s (a few blocks more if the encoder gave some back before it was held); the rest dropped.
      const kept = recorder.seconds;
      expect(kept).toBeGreaterThanOrEqual(32);
      expect(kept).toBeLessThanOrEqual(33);
      expect(kept + recorder.droppedSeconds).toBe(seconds);

      const reading = drain();
      await recorder.close();
      closeSync(writer);
      closeSync(filler);
      const written = (await reading).subarray(junk);
      expect(part()).toEqual({ seconds: kept, bytes: written.length, droppedSeconds: seconds - kept });
      expect(mp3.blocksInFlight).toBe(0);
      // The part is the audio kept, both sides in step: as long as its clock says, the tones where they were.
      const decoded = await decodeMp3(written);
      expect(decoded.seconds).toBeGreaterThanOrEqual(kept);
      expect(decoded.seconds).toBeLessThanOrEqual(kept + PART_PADDING);
      expect(level(decoded, 0, 0.2, kept - 0.2)).toBeGreaterThan(LOUD);
      expect(level(decoded, 1, 0.2, kept - 0.2)).toBeGreaterThan(LOUD);
    }, 60_000);

    it('keeps at most MAX_BLOCKS_IN_FLIGHT waiting for the whole instance: a recording past it drops what it is given', async () => {
      const recorders = Array.from({ length: MAX_BLOCKS_IN_FLIGHT / MAX_BLOCKS_PER_SPOOL + 1 }, () => heldRecorder());
      const frame = tone(440, 0.02);
      let mostInFlight = 0;
      // Each recording in turn gets 40 s, more than its own bound; the last finds the instance's bound reached.
      for (const { recorder } of recorders) {
        for (let write = 0; write < 40 * 50; write++) {
          recorder.write(frame, frame);
          mostInFlight = Math.max(mostInFlight, mp3.blocksInFlight);
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(mostInFlight).toBe(MAX_BLOCKS_IN_FLIGHT);
      const last = recorders.at(-1)!.recorder;
      expect(last.seconds).toBeLessThanOrEqual(1);
      expect(last.seconds + last.droppedSeconds).toBe(40);

      const reading = drain();
      await Promise.all(recorders.map(({ recorder }) => recorder.close()));
      closeSync(writer);
      closeSync(filler);
      await reading;
      expect(mp3.blocksInFlight).toBe(0);
      expect(recorders.map(({ part }) => part()!.seconds + part()!.droppedSeconds)).toEqual(recorders.map(() => 40));
    }, 120_000);
  });

  it('starts another encoder thread past SPOOLS_PER_THREAD recordings, up to one per core', async () => {
    const mp3 = new Mp3Encoding();
    const nowhere = openSync('/dev/null', 'w');
    try {
      const spools = Array.from({ length: SPOOLS_PER_THREAD }, () => mp3.open(nowhere));
      expect(mp3.threadCount).toBe(1);
      spools.push(mp3.open(nowhere));
      expect(mp3.threadCount).toBe(Math.min(2, os.availableParallelism()));
      await Promise.all(spools.map((spool) => spool.close()));
    } finally {
      closeSync(nowhere);
      await mp3.onApplicationShutdown();
    }
  });

  it('encodes at niceness 15: under contention the cores go to the calls and their synthesis first', async () => {
    const mp3 = new Mp3Encoding();
    const nowhere = openSync('/dev/null', 'w');
    try {
      const before = threadsAtNiceness(15); // the test context's encoder threads
      await mp3.open(nowhere).close(); // the thread has started and answered
      expect(threadsAtNiceness(15).filter((tid) => !before.includes(tid))).toHaveLength(1);
    } finally {
      closeSync(nowhere);
      await mp3.onApplicationShutdown();
    }
  });

  describe('RECORDING_MAX_BYTES', () => {
    const MAX = 40_000; // 5 s at 16 kHz (64 kbit/s), 10 s at a phone line's 8 kHz (32 kbit/s)
    let limited: TestContext;
    let limitedStorage: TestStorage;
    let account: TestAccount;
    let agent: number;

    beforeAll(async () => {
      limitedStorage = await localTestStorage(MAX);
      limited = await createTestContext({ ...limitedStorage.config, widgetRateLimit: 10_000 });
      account = await limited.createAccount();
      agent = (await limited.as(account).post('/agents').send({ name: 'Reception', language: 'en-IN' }).expect(201)).body.id;
    });
    afterAll(async () => {
      await limited?.close();
      await limitedStorage?.stop();
    });

    it.each([16_000, 8_000] as const)(
      "at %i Hz: stops writing at the limit across the conversation's sockets; the call gets what fit",
      async (rate) => {
        const budget = MAX / mp3BytesPerSecond(rate); // seconds
        const started = await conversation(account, agent, limited);
        const { conversationId } = started;
        expect(await socket(limited, account.id, conversationId, tone(440, 3), silence(3), rate)).toEqual({ from: 0, to: 3 });
        // The second socket has the rest of the budget (less the first part and room for the encoder's last
        // frames): its clock stops where its writing does. A third has nothing left and records nothing.
        const second = await socket(limited, account.id, conversationId, silence(budget - 1), tone(1000, budget - 1), rate);
        const kept = second.to - 3;
        expect(kept).toBeGreaterThan(budget - 4);
        expect(kept).toBeLessThan(budget - 3);
        expect(await socket(limited, account.id, conversationId, tone(440, 1), tone(440, 1), rate)).toEqual({
          from: second.to,
          to: second.to,
        });
        const parts = await segments(limited, conversationId);
        expect(parts).toEqual([
          { seq: 1, seconds: 3 },
          { seq: 2, seconds: expect.closeTo(kept, 9) },
        ]);
        await end(limited, started);
        await assembled(limited, conversationId);

        const bytes = await download(limited, account, conversationId);
        expect(bytes.length).toBeLessThanOrEqual(MAX);
        const mp3 = await decodeMp3(bytes);
        expect(mp3.sampleRate).toBe(rate);
        expect(mp3.seconds).toBeGreaterThanOrEqual(3 + kept);
        expect(mp3.seconds).toBeLessThanOrEqual(3 + kept + 2 * PADDING_AT[rate]);
        expect(level(mp3, 0, 0.2, 2.8)).toBeGreaterThan(LOUD);
        expect(level(mp3, 1, 3.3, 3 + kept)).toBeGreaterThan(LOUD);
      },
    );
  });
});
