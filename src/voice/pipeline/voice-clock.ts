import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { FRAME_MS } from '../voice-format';

/** Past this lateness the clock stops catching up tick by tick and starts again from now (the process was stalled). */
const MAX_CATCH_UP_MS = 200;
/** How often the ticks' lateness is logged (at debug level: the voice benchmark reads it). */
const REPORT_EVERY_TICKS = 500;

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
  private readonly logger = new Logger('Voice');
  /** Lateness of the ticks since the last report, in whole milliseconds (index: ms, the last bucket: more). */
  private readonly lateness = new Uint32Array(MAX_CATCH_UP_MS + 1);
  private ticks = 0;

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
      this.count(performance.now() - this.due);
      for (const tick of this.calls) tick();
      this.due += FRAME_MS;
    }
    if (this.calls.size > 0) this.schedule();
    else this.stop();
  };

  /** Counts a tick's lateness (the agent's audio is sent at the ticks: this is its send jitter) and reports it now and then. */
  private count(lateMs: number): void {
    this.lateness[Math.min(MAX_CATCH_UP_MS, Math.floor(lateMs))]++;
    if (++this.ticks < REPORT_EVERY_TICKS) return;
    this.logger.debug(
      { voiceClock: { ticks: this.ticks, calls: this.calls.size, lateMs: quantiles(this.lateness, this.ticks) } },
      'Voice clock',
    );
    this.lateness.fill(0);
    this.ticks = 0;
  }

  private stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** p50, p99 and the maximum of a histogram of whole milliseconds. */
function quantiles(histogram: Uint32Array, total: number): { p50: number; p99: number; max: number } {
  const at = (share: number) => {
    let seen = 0;
    for (let ms = 0; ms < histogram.length; ms++) if ((seen += histogram[ms]) >= share * total) return ms;
    return histogram.length - 1;
  };
  let max = histogram.length - 1;
  while (max > 0 && histogram[max] === 0) max--;
  return { p50: at(0.5), p99: at(0.99), max };
}
