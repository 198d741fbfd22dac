import { Injectable, Module } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';

/** How loaded the instance is with spoken calls (GET /health reports it). */
export interface VoiceLoad {
  calls: number;
  maxCalls: number;
}

/** Seconds a client refused for want of room is told to wait (Retry-After): calls end every few seconds at 100. */
export const NO_ROOM_RETRY_AFTER_SECONDS = 5;

/**
 * The spoken calls this instance serves at once, at most VOICE_MAX_CALLS (its measured capacity: beyond it, it
 * refuses rather than slows every call down). A call holds a place from its `start` proven (before its lease and
 * its pipeline) until its socket has closed and its part of the recording is stored; a socket still waiting for
 * `start` holds none. The one owner of the count: the gateway asks `full` before an upgrade (503), a session
 * `take`s a place at `start` (1013 when there is none), and /health reads `load`.
 */
@Injectable()
export class VoiceCapacity {
  readonly maxCalls: number;
  private calls = 0;

  constructor(@InjectConfig() config: AppConfig) {
    this.maxCalls = config.voice.maxCalls;
  }

  get full(): boolean {
    return this.calls >= this.maxCalls;
  }

  /** A place for one call, and the function that gives it back (once, however often it is called); undefined when full. */
  take(): (() => void) | undefined {
    if (this.full) return undefined;
    this.calls++;
    let held = true;
    return () => {
      if (held) this.calls--;
      held = false;
    };
  }

  load(): VoiceLoad {
    return { calls: this.calls, maxCalls: this.maxCalls };
  }
}

/** VoiceCapacity alone, so that /health reads it without the voice module's dependencies. */
@Module({ providers: [VoiceCapacity], exports: [VoiceCapacity] })
export class VoiceCapacityModule {}
