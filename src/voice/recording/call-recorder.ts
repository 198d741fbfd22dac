import { Injectable, Logger } from '@nestjs/common';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../../config/config';
import { InjectConfig } from '../../config/config.module';
import { newRecordingKey, RecordingStorage } from '../../recordings/recording-storage';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import { RecordingAssembly } from './recording-assembly';
import { RecordingSegmentsRepository } from './recording-segments.repository';
import { Mp3Encoding, Mp3Spool } from './mp3-encoding';

/** Stereo blocks handed to the encoder: half a second (fewer, larger messages encode faster). */
const BLOCK_SAMPLES = VOICE_SAMPLE_RATE / 2;
/** Room kept below RECORDING_MAX_BYTES for the encoder's last frames. */
const FINAL_BYTES = 16 * 1024;

/** One voice socket's part of its conversation's recording (see CallRecordings). */
export interface CallRecorder {
  /** Seconds recorded before this socket (earlier sockets) plus what it has written: the timeline's clock. */
  readonly seconds: number;
  /** The timeline's next stretch: the visitor left, the agent right, 16 kHz, equal lengths. Past the size limit, dropped. */
  write(left: Int16Array, right: Int16Array): void;
  /** Encoding finished, the part stored and listed; the conversation's recording assembled if it has ended. */
  close(): Promise<void>;
}

interface Conversation {
  accountId: number;
  conversationId: string;
}

/**
 * The recording of spoken conversations (contract section 15): each socket writes its part of the timeline as
 * it goes, encoded to MP3 by the encoder's worker into a spool file under DATA_DIR (so memory per call stays one
 * half-second block whatever its length); when the socket closes the part is stored like an upload and listed.
 * The call's recording is the parts joined (RecordingAssembly), at most RECORDING_MAX_BYTES in all.
 */
@Injectable()
export class CallRecordings {
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

  async open(conversation: Conversation): Promise<CallRecorder> {
    const before = await this.segments.totals(conversation.accountId, conversation.conversationId);
    await mkdir(this.spoolDir, { recursive: true });
    const file = path.join(this.spoolDir, `${randomUUID()}.mp3`);
    return new SpooledRecorder(this, conversation, file, this.mp3.open(file), before.seconds, this.maxBytes - before.bytes - FINAL_BYTES);
  }

  /** Stores a closed part and lists it; then assembles the recording if the conversation has already ended. */
  async keep(conversation: Conversation, file: string, seconds: number, bytes: number): Promise<void> {
    const { accountId, conversationId } = conversation;
    try {
      if (seconds > 0 && bytes > 0) {
        const key = newRecordingKey();
        await this.storage.write(key, createReadStream(file));
        if (!(await this.segments.insert(accountId, conversationId, key, seconds, bytes))) await this.storage.remove(key);
      }
    } finally {
      await rm(file, { force: true });
    }
    await this.assembly.queueIfEnded(accountId, conversationId);
  }

  failed(error: unknown, file: string): Promise<void> {
    this.logger.error({ error: { name: (error as Error)?.name } }, "A voice socket's part of the recording was lost");
    return rm(file, { force: true });
  }
}

class SpooledRecorder implements CallRecorder {
  private left = new Float32Array(BLOCK_SAMPLES);
  private right = new Float32Array(BLOCK_SAMPLES);
  private filled = 0;
  private written = 0;
  private full = false;

  constructor(
    private readonly owner: CallRecordings,
    private readonly conversation: Conversation,
    private readonly file: string,
    private readonly spool: Mp3Spool,
    private readonly offsetSeconds: number,
    private readonly byteBudget: number,
  ) {
    this.full = byteBudget <= 0;
  }

  get seconds(): number {
    return this.offsetSeconds + this.written / VOICE_SAMPLE_RATE;
  }

  write(left: Int16Array, right: Int16Array): void {
    if (this.full) return;
    for (let offset = 0; offset < left.length;) {
      const take = Math.min(BLOCK_SAMPLES - this.filled, left.length - offset);
      for (let index = 0; index < take; index++) {
        this.left[this.filled + index] = left[offset + index] / 32768;
        this.right[this.filled + index] = right[offset + index] / 32768;
      }
      this.filled += take;
      this.written += take;
      offset += take;
      if (this.filled === BLOCK_SAMPLES) this.flush();
    }
  }

  async close(): Promise<void> {
    if (this.filled > 0 && !this.full) this.flush();
    try {
      const bytes = await this.spool.close();
      await this.owner.keep(this.conversation, this.file, this.written / VOICE_SAMPLE_RATE, bytes);
    } catch (error) {
      await this.owner.failed(error, this.file);
    }
  }

  /** Hands the block to the encoder (its buffers go with it) and starts a new one; stops at the size limit. */
  private flush(): void {
    const whole = this.filled === BLOCK_SAMPLES;
    this.spool.write(whole ? this.left : this.left.slice(0, this.filled), whole ? this.right : this.right.slice(0, this.filled));
    this.left = new Float32Array(BLOCK_SAMPLES);
    this.right = new Float32Array(BLOCK_SAMPLES);
    this.filled = 0;
    // Each block is about 4 KB of MP3: the limit is checked against the size the worker last reported, plus a block.
    if (this.spool.bytes + 2 * (BLOCK_SAMPLES / VOICE_SAMPLE_RATE) * 8_000 >= this.byteBudget) this.full = true;
  }
}
