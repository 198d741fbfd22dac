// Loaded into the service by bench/voice-bounds.ts (`node -r`): its event loop's delay, measured from inside by
// perf_hooks, written as JSON to BENCH_LOOP_DELAY_FILE on each SIGUSR2 (then measured afresh), so that the
// benchmark reads it phase by phase.
const { monitorEventLoopDelay } = require('node:perf_hooks');
const fs = require('node:fs');

const histogram = monitorEventLoopDelay({ resolution: 5 });
histogram.enable();
let report = 0;
process.on('SIGUSR2', () => {
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  const figures = { report: ++report, p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) };
  fs.writeFileSync(process.env.BENCH_LOOP_DELAY_FILE, JSON.stringify(figures));
  histogram.reset();
});
