import type { VoiceLoad } from '../voice/voice-capacity';

/** The spoken calls this instance serves, against its capacity: a balancer may send voice elsewhere as it fills. */
export class VoiceLoadResponse {
  /**
   * Spoken calls this instance serves now: voice sockets whose `start` was accepted, until their call is stored.
   * @example 37
   */
  calls: number;
  /**
   * `VOICE_MAX_CALLS`: at `calls` = `maxCalls` the voice socket's handshake is refused with 503 and `Retry-After`.
   * @example 100
   */
  maxCalls: number;
}

export class HealthResponse {
  /** @example "ok" */
  status: 'ok';
  /** @example "up" */
  database: 'up';
  /** This instance's spoken calls (the other instances' are theirs to report). */
  voice: VoiceLoadResponse;
}

export class LivenessResponse {
  /** @example "ok" */
  status: 'ok';
}

/** What a readiness check found: the database answered its ping (the handler answers 503 when it does not). */
export interface HealthState {
  database: 'up';
  voice: VoiceLoad;
}

export const toHealthResponse = (state: HealthState): HealthResponse => ({
  status: 'ok',
  database: state.database,
  voice: { calls: state.voice.calls, maxCalls: state.voice.maxCalls },
});

/** Liveness depends on nothing but answering at all. */
export const toLivenessResponse = (): LivenessResponse => ({ status: 'ok' });
