/**
 * Load generation with autocannon, in the runner's process (the servers are separate processes), with the
 * latency of every response kept at full precision (autocannon's own histogram rounds to whole ms,
 * too coarse for sub-millisecond responses at low load).
 */
import { Scenario } from './scenarios';

// autocannon ships no types: the part of its API used here.
interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (request: AutocannonRequest, context: Record<string, unknown>) => AutocannonRequest;
  onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
}
interface AutocannonResult {
  requests: { average: number; total: number };
  throughput: { average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
  statusCodeStats: Record<string, { count: number }>;
}
interface AutocannonInstance extends PromiseLike<AutocannonResult> {
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, responseTimeMs: number) => void): void;
}
const autocannon = require('autocannon') as (options: Record<string, unknown>) => AutocannonInstance;

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

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

/** The autocannon requests of a scenario: reads draw their path from the scenario, the write pairs POST and PATCH. */
function requestsOf(scenario: Scenario, apiKey: string, agentPrefix: string): AutocannonRequest[] {
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
      setupRequest: (request, context) => ({ ...request, path: `/agents/${context.agentId}` }),
    },
  ];
}

/** One autocannon run; returns its figures. */
export async function runLoad(
  target: LoadTarget,
  scenario: Scenario,
  options: { connections: number; seconds: number; agentPrefix: string },
): Promise<LoadFigures> {
  const latencies: number[] = [];
  const instance = autocannon({
    url: target.baseUrl,
    connections: options.connections,
    duration: options.seconds,
    requests: requestsOf(scenario, target.apiKey, options.agentPrefix),
    timeout: 10,
  });
  instance.on('response', (_client, _status, _bytes, responseTimeMs) => latencies.push(responseTimeMs));
  const result = await instance;
  const sorted = Float64Array.from(latencies).sort();
  return {
    connections: options.connections,
    seconds: result.duration,
    requests: result.requests.total,
    requestsPerSecond: round(result.requests.total / result.duration, 1),
    p50Ms: round(percentile(sorted, 0.5), 3),
    p90Ms: round(percentile(sorted, 0.9), 3),
    p99Ms: round(percentile(sorted, 0.99), 3),
    maxMs: round(sorted[sorted.length - 1] ?? NaN, 3),
    bytesPerResponse: Math.round(result.throughput.average / Math.max(1, result.requests.average)),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}
