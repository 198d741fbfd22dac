export class HealthResponse {
  /** @example "ok" */
  status: 'ok';
  /** @example "up" */
  database: 'up';
}
