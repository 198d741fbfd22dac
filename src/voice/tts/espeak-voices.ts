import { ReplyLanguage } from '../../agents/voices';

/** espeak-ng's voice for each reply language: it has no Indian English (British English instead) and names Odia `or`. */
export const ESPEAK_LANGUAGES: Record<ReplyLanguage, string> = {
  'hi-IN': 'hi',
  'en-IN': 'en',
  'bn-IN': 'bn',
  'gu-IN': 'gu',
  'kn-IN': 'kn',
  'ml-IN': 'ml',
  'mr-IN': 'mr',
  'od-IN': 'or',
  'pa-IN': 'pa',
  'ta-IN': 'ta',
  'te-IN': 'te',
  'en-US': 'en-us',
};

export type VoiceGender = 'female' | 'male';

/** The catalog voices are Sarvam's speakers; espeak speaks each with a variant of the speaker's gender. */
export const VOICE_GENDERS: ReadonlyMap<string, VoiceGender> = new Map([
  ['anushka', 'female'],
  ['manisha', 'female'],
  ['vidya', 'female'],
  ['arya', 'female'],
  ['ritu-preview', 'female'],
  ['anushka-ng', 'female'],
  ['shubh', 'male'],
  ['abhilash', 'male'],
  ['karun', 'male'],
  ['hitesh', 'male'],
  ['aditya-preview', 'male'],
  ['shubh-ng', 'male'],
]);

const VARIANTS: Record<VoiceGender, string> = { female: '+f3', male: '+m3' };

/**
 * The espeak-ng voice for a catalog voice speaking `language`, such as `hi+f3`. A voice id outside the catalog
 * (agents are validated against it, so only a bug gets here) speaks with the language's own voice.
 */
export function espeakVoice(voiceId: string, language: ReplyLanguage): string {
  const gender = VOICE_GENDERS.get(voiceId);
  return ESPEAK_LANGUAGES[language] + (gender ? VARIANTS[gender] : '');
}
