/**
 * Load generation with autocannon, in the runner's process (the servers are separate processes), with the
 * latency of every response kept at full precision (autocannon's own histogram rounds to whole ms,
 * too coarse for sub-millisecond responses at low load).
 */
import autocannon from 'autocannon'; // typed in scripts/autocannon.d.ts
import { Scenario } from './scenarios';
import { percentileOfSorted, round } from './stats';

export interface LoadFigures {
  connections: number;
  seconds: number;
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Mean response body size. */
  bytesPerResponse: number;
  non2xx: number;
  errors: number;
}

export interface LoadTarget {
  baseUrl: string;
  apiKey: string;
}

/** What one measured window recorded (several windows make one LoadFigures). */
export interface LoadSample {
  seconds: number;
  latencies: number[];
  bytes: number;
  non2xx: number;
  errors: number;
}

/** The autocannon requests of a scenario: reads draw their path from the scenario, the write pairs POST and PATCH. */
function requestsOf(scenario: Scenario, apiKey: string, agentPrefix: string): autocannon.Request[] {
  const headers = { 'x-api-key': apiKey };
  if (scenario.paths) {
    const next = scenario.paths();
    return [{ method: 'GET', headers, setupRequest: (request) => ({ ...request, path: next() }) }];
  }
  const jsonHeaders = { ...headers, 'content-type': 'application/json' };
  return [
    {
      method: 'POST',
      path: '/agents',
      headers: jsonHeaders,
      body: JSON.stringify({ name: agentPrefix, description: 'Created by the benchmark', voice: 'anushka', language: 'en-IN' }),
      onResponse: (status, body, context) => {
        context.agentId = status === 201 ? JSON.parse(body).id : 0;
      },
    },
    {
      method: 'PATCH',
      headers: jsonHeaders,
      body: JSON.stringify({ description: 'Patched by the benchmark', systemPrompt: 'Be brief.' }),
      setupRequest: (request, context) => ({ ...request, path: `/agents/${String(context.agentId)}` }),
    },
  ];
}

/** Longest warm-up, whatever the scenario. */
const MAX_WARMUP_SECONDS = 30;
/** Responses per connection before measuring: the start of a run is slow until every connection has done a few. */
const WARMUP_RESPONSES_PER_CONNECTION = 10;

/**
 * One autocannon run on the same connections throughout: a warm-up of at least `warmupSeconds` and at least
 * 10 responses per connection (opening 64 connections at once makes the start of any run slow, for both
 * servers, and the slower the scenario the longer that lasts), then `seconds` measured. Only the responses
 * that complete inside the measured window count. `onMeasure` marks its start and end (CPU and RSS sampling).
 */
export async function runLoad(
  target: LoadTarget,
  scenario: Scenario,
  options: {
    connections: number;
    warmupSeconds: number;
    seconds: number;
    agentPrefix: string;
    onMeasure?: (phase: 'start' | 'end') => void;
  },
): Promise<LoadSample> {
  const sample: LoadSample = { seconds: 0, latencies: [], bytes: 0, non2xx: 0, errors: 0 };
  const launchedAt = performance.now();
  const state: { phase: 'warmup' | 'measuring' | 'done' } = { phase: 'warmup' };
  let warmupResponses = 0;
  let startedAt = 0;
  let endTimer: NodeJS.Timeout | undefined;
  const instance = autocannon({
    url: target.baseUrl,
    connections: options.connections,
    duration: MAX_WARMUP_SECONDS + options.seconds + 5,
    requests: requestsOf(scenario, target.apiKey, options.agentPrefix),
    timeout: 10,
  });
  const finish = () => {
    state.phase = 'done';
    sample.seconds = (performance.now() - startedAt) / 1000;
    options.onMeasure?.('end');
    instance.stop();
  };
  const maybeStart = () => {
    const elapsed = (performance.now() - launchedAt) / 1000;
    const warm = elapsed >= options.warmupSeconds && warmupResponses >= options.connections * WARMUP_RESPONSES_PER_CONNECTION;
    if (state.phase !== 'warmup' || !(warm || elapsed >= MAX_WARMUP_SECONDS)) return;
    state.phase = 'measuring';
    startedAt = performance.now();
    options.onMeasure?.('start');
    endTimer = setTimeout(finish, options.seconds * 1000);
  };
  const poll = setInterval(maybeStart, 100);
  instance.on('response', (_client, status, bytes, responseTimeMs) => {
    if (state.phase === 'warmup') {
      warmupResponses++;
      return;
    }
    if (state.phase !== 'measuring') return;
    sample.latencies.push(responseTimeMs);
    sample.bytes += bytes;
    if (status < 200 || status > 299) sample.non2xx++;
  });
  const result = await instance;
  clearInterval(poll);
  clearTimeout(endTimer);
  if (state.phase === 'measuring') finish();
  sample.errors = result.errors + result.timeouts;
  return sample;
}

/** The figures of one or more measured windows of the same scenario and server. */
export function summarize(connections: number, samples: LoadSample[]): LoadFigures {
  const sorted = Float64Array.from(samples.flatMap((sample) => sample.latencies)).sort();
  const seconds = samples.reduce((sum, sample) => sum + sample.seconds, 0);
  const total = <K extends 'bytes' | 'non2xx' | 'errors'>(key: K) => samples.reduce((sum, sample) => sum + sample[key], 0);
  return {
    connections,
    seconds: round(seconds, 1),
    requests: sorted.length,
    requestsPerSecond: round(sorted.length / seconds, 1),
    p50Ms: round(percentileOfSorted(sorted, 0.5), 3),
    p90Ms: round(percentileOfSorted(sorted, 0.9), 3),
    p99Ms: round(percentileOfSorted(sorted, 0.99), 3),
    maxMs: round(sorted[sorted.length - 1] ?? NaN, 3),
    bytesPerResponse: Math.round(total('bytes') / Math.max(1, sorted.length)),
    non2xx: total('non2xx'),
    errors: total('errors'),
  };
}
