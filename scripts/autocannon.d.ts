// autocannon ships no types: the part of its API that the benchmarks (bench/) and the soak test (scripts/soak.ts) use.
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request;
      onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
    }

    interface Result {
      requests: { average: number; total: number };
      throughput: { average: number };
      latency: { p50: number; p99: number; max: number };
      non2xx: number;
      '2xx': number;
      errors: number;
      timeouts: number;
      duration: number;
      statusCodeStats: Record<string, { count: number }>;
    }

    /** A run: a promise of its result, which can be stopped early and reports every response. */
    interface Instance extends PromiseLike<Result> {
      stop(): void;
      on(event: 'response', listener: (client: unknown, status: number, bytes: number, responseTimeMs: number) => void): void;
    }
  }

  function autocannon(options: Record<string, unknown>): autocannon.Instance;

  export = autocannon;
}
