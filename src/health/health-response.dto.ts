export class HealthResponse {
  /** @example "ok" */
  status: 'ok';
  /** @example "up" */
  database: 'up';
}

export class LivenessResponse {
  /** @example "ok" */
  status: 'ok';
}

/** The database answered its ping (the handler answers 503 when it does not). */
export const toHealthResponse = (database: 'up'): HealthResponse => ({ status: 'ok', database });

/** Liveness depends on nothing but answering at all. */
export const toLivenessResponse = (): LivenessResponse => ({ status: 'ok' });
