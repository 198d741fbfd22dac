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
