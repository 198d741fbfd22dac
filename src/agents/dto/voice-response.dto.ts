import { Voice, VoiceTier } from '../voices';

export class VoiceResponse {
  /** @example "shubh" */
  id: string;
  /** @example "Shubh" */
  name: string;
  /** @example "stable" */
  tier: VoiceTier;
  /** Whether the calling account may give this voice to an agent. @example true */
  available: boolean;
}

/** A voice of the catalog and whether the calling account may use it. */
export interface VoiceChoice {
  voice: Voice;
  available: boolean;
}

export function toVoiceResponse({ voice, available }: VoiceChoice): VoiceResponse {
  return { id: voice.id, name: voice.name, tier: voice.tier, available };
}
