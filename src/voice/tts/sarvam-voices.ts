import { ReplyLanguage } from '../../agents/voices';

/** Bulbul's speaker and model for a catalog voice. */
export interface BulbulVoice {
  speaker: string;
  model: 'bulbul:v2' | 'bulbul:v3';
  /** Characters one request may carry. */
  maxText: number;
}

const V2 = { model: 'bulbul:v2', maxText: 1_500 } as const;
const V3 = { model: 'bulbul:v3', maxText: 2_500 } as const;

/**
 * The catalog's voices are Bulbul's speakers. A `-preview` or `-ng` id is its speaker on Bulbul's newest model
 * that has it: Shubh, Ritu and Aditya are on bulbul:v3; Anushka is on bulbul:v2 only (Sarvam's newest model takes
 * other speaker ids), so `anushka-ng` is Anushka on v2.
 */
const VOICES: Record<string, BulbulVoice> = {
  shubh: { speaker: 'shubh', ...V3 },
  'shubh-ng': { speaker: 'shubh', ...V3 },
  'ritu-preview': { speaker: 'ritu', ...V3 },
  'aditya-preview': { speaker: 'aditya', ...V3 },
  anushka: { speaker: 'anushka', ...V2 },
  'anushka-ng': { speaker: 'anushka', ...V2 },
  manisha: { speaker: 'manisha', ...V2 },
  vidya: { speaker: 'vidya', ...V2 },
  arya: { speaker: 'arya', ...V2 },
  abhilash: { speaker: 'abhilash', ...V2 },
  karun: { speaker: 'karun', ...V2 },
  hitesh: { speaker: 'hitesh', ...V2 },
};

export function bulbulVoice(voiceId: string): BulbulVoice {
  return VOICES[voiceId] ?? VOICES.shubh;
}

/** Sarvam writes the reply languages as they are, but has no US English: en-US is spoken as en-IN. */
export const sarvamLanguage = (language: ReplyLanguage): string => (language === 'en-US' ? 'en-IN' : language);
