import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { FRAME_MS } from '../voice-format';

/** Past this lateness the clock stops catching up tick by tick and starts again from now (the process was stalled). */
const MAX_CATCH_UP_MS = 200;

/**
 * The one 20 ms ticker of every spoken call on this instance: each tick, each call sends what its playback
 * allows and writes its recording's next 20 ms. One timer for all calls rather than one per call, scheduled
 * against the monotonic clock so that its ticks do not drift; a late tick is made up at once.
 */
@Injectable()
export class VoiceClock implements OnApplicationShutdown {
  private readonly calls = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private due = 0;
  /** Called with each tick's lateness in milliseconds (the voice benchmark's send jitter). */
  onTick: ((latenessMs: number) => void) | undefined;

  /** Calls `tick` every 20 ms until the returned function is called. */
  subscribe(tick: () => void): () => void {
    this.calls.add(tick);
    if (!this.timer) {
      this.due = performance.now() + FRAME_MS;
      this.schedule();
    }
    return () => {
      this.calls.delete(tick);
      if (this.calls.size === 0) this.stop();
    };
  }

  onApplicationShutdown(): void {
    this.calls.clear();
    this.stop();
  }

  private schedule(): void {
    this.timer = setTimeout(this.run, Math.max(0, this.due - performance.now()));
  }

  private readonly run = (): void => {
    const now = performance.now();
    if (now - this.due > MAX_CATCH_UP_MS) this.due = now;
    while (this.due <= now && this.calls.size > 0) {
      this.onTick?.(performance.now() - this.due);
      for (const tick of this.calls) tick();
      this.due += FRAME_MS;
    }
    if (this.calls.size > 0) this.schedule();
    else this.stop();
  };

  private stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
