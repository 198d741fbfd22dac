import { CallLatency, TranscriptTurn } from './call.entity';

/**
 * The latency of a spoken call (contract section 19) from its transcript: the `total` of every entry that has a
 * `latencyMs`, as their count, median, 90th percentile and maximum. Percentiles by nearest rank (a figure some turn
 * had, never one between two). Computed once, as the call is made, so that reading a call does no arithmetic.
 */
export function callLatency(transcript: readonly TranscriptTurn[]): CallLatency {
  const totals = transcript.flatMap((entry) => (entry.latencyMs ? [entry.latencyMs.total] : [])).sort((a, b) => a - b);
  if (totals.length === 0) return { turns: 0, p50Ms: null, p90Ms: null, maxMs: null };
  const rank = (percentile: number) => totals[Math.ceil((percentile / 100) * totals.length) - 1];
  return { turns: totals.length, p50Ms: rank(50), p90Ms: rank(90), maxMs: totals.at(-1)! };
}
