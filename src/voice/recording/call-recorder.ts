import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { createReadStream } from 'node:fs';
import { FileHandle, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../../config/config';
import { InjectConfig } from '../../config/config.module';
import { newRecordingKey, RecordingStorage } from '../../recordings/recording-storage';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import { Mp3Encoding, mp3BytesPerSecond, Mp3Spool, RecordingSampleRate, StereoBlock } from './mp3-encoding';
import { RecordingAssembly } from './recording-assembly';
import { RecordingSegmentsRepository } from './recording-segments.repository';

/**
 * Stereo blocks handed to the encoder: a quarter of a second. Larger blocks mean fewer messages, but LAME's heap
 * in WebAssembly grows with the largest block it was given, and the main thread holds a block or three per socket:
 * the memory per recording is 0.65 MiB at a quarter second, 0.79 MiB at half a second (bench/voice-recording.ts).
 */
export const BLOCK_SAMPLES = VOICE_SAMPLE_RATE / 4;
/** Room kept below RECORDING_MAX_BYTES for the frames the encoder adds at the end (its delay and padding). */
const FINAL_BYTES = 2 * 1024;
/** A spool not written to for this long belongs to no live socket (its process died): it is removed at start. */
const ABANDONED_SPOOL_MS = 60 * 60 * 1000;

/** One voice socket's part of its conversation's recording (see CallRecordings). */
export interface CallRecorder {
  /** Seconds recorded before this socket (earlier sockets) plus what it has written: the timeline's clock. */
  readonly seconds: number;
  /** The timeline's next stretch: the visitor left, the agent right, 16 kHz, equal lengths. Past the size limit, dropped. */
  write(left: Int16Array, right: Int16Array): void;
  /** Encoding finished, the part stored and listed (or its loss logged); the recording reassembled if the conversation has ended. */
  close(): Promise<void>;
}

interface ConversationRef {
  accountId: number;
  conversationId: string;
}

/** A part as its encoding ended: how long, how many bytes of MP3, how much audio was dropped (the encoder behind). */
interface SpooledPart {
  seconds: number;
  bytes: number;
  droppedSeconds: number;
}

/**
 * The recording of spoken conversations (contract section 15): each socket writes its part of the timeline as
 * it goes, encoded to MP3 by an encoder thread into a spool file under DATA_DIR (so memory per call stays a few
 * quarter-second blocks whatever its length, and what waits for the encoder is bounded: SpooledRecorder); when the
 * socket closes the part is stored like an upload and listed.
 * The call's recording is the parts joined (RecordingAssembly), at most RECORDING_MAX_BYTES in all.
 */
@Injectable()
export class CallRecordings implements OnModuleInit {
  private readonly logger = new Logger('Voice');
  private readonly spoolDir: string;
  private readonly maxBytes: number;

  constructor(
    private readonly mp3: Mp3Encoding,
    private readonly segments: RecordingSegmentsRepository,
    private readonly storage: RecordingStorage,
    private readonly assembly: RecordingAssembly,
    @InjectConfig() config: AppConfig,
  ) {
    this.spoolDir = path.join(config.dataDir, 'voice-spool');
    this.maxBytes = config.storage.maxRecordingBytes;
  }

  onModuleInit(): void {
    this.removeAbandonedSpools().catch((error: unknown) => {
      this.logger.warn({ error: { name: (error as Error)?.name } }, 'Could not clear abandoned recording spools');
    });
  }

  /**
   * A socket's part of its conversation's recording, encoded at `rate` (a conversation's parts share one: a phone
   * call's are at the line's 8 kHz, a browser's at VOICE_SAMPLE_RATE), what is written being at VOICE_SAMPLE_RATE.
   */
  async open(conversation: ConversationRef, rate: RecordingSampleRate = VOICE_SAMPLE_RATE): Promise<CallRecorder> {
    const before = await this.segments.totals(conversation.accountId, conversation.conversationId);
    await mkdir(this.spoolDir, { recursive: true });
    const file = path.join(this.spoolDir, `${randomUUID()}.mp3`);
    const handle = await open(file, 'w');
    const room = Math.max(0, this.maxBytes - before.bytes - FINAL_BYTES);
    const maxSamples = Math.floor((room / mp3BytesPerSecond(rate)) * VOICE_SAMPLE_RATE);
    return new SpooledRecorder(this.mp3.open(handle.fd, rate), before.seconds, maxSamples, (part) =>
      this.keep(conversation, file, handle, part),
    );
  }

  /** Stores a closed part and lists it; then the recording is reassembled if the conversation has already ended. */
  private async keep(conversation: ConversationRef, file: string, handle: FileHandle, closing: Promise<SpooledPart>): Promise<void> {
    const { accountId, conversationId } = conversation;
    let listed = false;
    try {
      const part = await closing.finally(() => handle.close());
      if (part.droppedSeconds > 0) {
        const dropped = { droppedSeconds: Math.round(part.droppedSeconds * 100) / 100, keptSeconds: part.seconds };
        this.logger.warn({ recording: dropped }, 'The MP3 encoder was behind: audio was dropped from a recording');
      }
      listed = await this.store(conversation, file, part);
    } catch (error) {
      this.logger.error({ error: { name: (error as Error)?.name } }, "A voice socket's part of the recording was lost");
    } finally {
      await rm(file, { force: true });
    }
    if (!listed) return;
    await this.assembly.partStored(accountId, conversationId).catch((error: unknown) => {
      this.logger.error({ error: { name: (error as Error)?.name } }, "A late part could not be added to its call's recording");
    });
  }

  /** The spool file stored under a new key and listed after the conversation's other parts; false if nothing was kept. */
  private async store({ accountId, conversationId }: ConversationRef, file: string, part: SpooledPart): Promise<boolean> {
    if (part.seconds === 0 || part.bytes === 0) return false;
    const key = newRecordingKey();
    await this.storage.write(key, createReadStream(file));
    if (await this.segments.insert(accountId, conversationId, key, part.seconds, part.bytes)) return true;
    await this.storage.remove(key); // the conversation was erased meanwhile
    return false;
  }

  private async removeAbandonedSpools(): Promise<void> {
    const names = await readdir(this.spoolDir).catch(() => [] as string[]);
    for (const name of names) {
      const file = path.join(this.spoolDir, name);
      const stats = await stat(file).catch(() => undefined);
      if (stats && Date.now() - stats.mtimeMs > ABANDONED_SPOOL_MS) await rm(file, { force: true });
    }
  }
}

/**
 * One socket's recorder: 20 ms writes gathered into a preallocated quarter-second block (both sides, interleaved),
 * which is handed (its buffer transferred) to the encoder's worker and comes back to be filled again; the audio
 * it holds is that block and a spare or two, plus what waits for the encoder (MAX_BLOCKS_PER_SPOOL at most).
 *
 * When the encoder is that far behind (this recording's bound or the instance's, MAX_BLOCKS_IN_FLIGHT), the audio
 * written meanwhile is dropped, both sides together, until a block comes back: the part is shorter by what was
 * dropped (`droppedSeconds`, logged when the part is stored), and its clock (`seconds`, where the transcript's
 * `startSeconds` point) counts only what was kept, so that they still point into the recording where the audio is.
 */
export class SpooledRecorder implements CallRecorder {
  private block: StereoBlock = new Int16Array(2 * BLOCK_SAMPLES);
  /** Samples of each side in the block. */
  private filled = 0;
  private written = 0;
  private dropped = 0;
  private closing: Promise<void> | undefined;

  constructor(
    readonly spool: Mp3Spool,
    private readonly offsetSeconds: number,
    /** The samples this part may hold within RECORDING_MAX_BYTES (a constant bitrate makes bytes a function of time). */
    private readonly maxSamples: number,
    private readonly finish: (closing: Promise<SpooledPart>) => Promise<void>,
  ) {}

  get seconds(): number {
    return this.offsetSeconds + this.written / VOICE_SAMPLE_RATE;
  }

  /** Seconds of audio dropped because the encoder was behind. */
  get droppedSeconds(): number {
    return this.dropped / VOICE_SAMPLE_RATE;
  }

  /** Bytes of audio this recorder holds (the block it fills and its spool's spare ones), whatever the call's length. */
  get heldBytes(): number {
    return this.block.byteLength + this.spool.spareBytes;
  }

  write(left: Int16Array, right: Int16Array): void {
    if (this.closing) return;
    const length = Math.min(left.length, this.maxSamples - this.written);
    for (let offset = 0; offset < length;) {
      // A block is begun only with room for it at the encoder; without, the rest of this stretch is dropped.
      if (this.filled === 0 && !this.spool.reserve()) {
        this.dropped += length - offset;
        return;
      }
      const take = Math.min(BLOCK_SAMPLES - this.filled, length - offset);
      const block = this.block;
      for (let index = 0, at = 2 * this.filled; index < take; index++, at += 2) {
        block[at] = left[offset + index];
        block[at + 1] = right[offset + index];
      }
      this.filled += take;
      this.written += take;
      offset += take;
      if (this.filled === BLOCK_SAMPLES) this.flush();
    }
  }

  close(): Promise<void> {
    this.closing ??= this.end();
    return this.closing;
  }

  private end(): Promise<void> {
    if (this.filled > 0) this.flush();
    const seconds = this.written / VOICE_SAMPLE_RATE;
    const droppedSeconds = this.droppedSeconds;
    return this.finish(this.spool.close().then((bytes) => ({ seconds, bytes, droppedSeconds })));
  }

  /** Hands the block to the encoder (its buffer goes with it) and takes the next: one the worker gave back, or a new one. */
  private flush(): void {
    const whole = this.filled === BLOCK_SAMPLES;
    this.spool.write(whole ? this.block : this.block.slice(0, 2 * this.filled));
    if (whole) this.block = this.spool.reuse() ?? new Int16Array(2 * BLOCK_SAMPLES);
    this.filled = 0;
  }
}
