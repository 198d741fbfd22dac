/** The voice catalog and the supported reply languages: the one place they are defined. */

export type VoiceTier = 'stable' | 'preview' | 'next-generation';

export interface Voice {
  id: string;
  name: string;
  tier: VoiceTier;
}

export const VOICES: readonly Voice[] = [
  { id: 'shubh', name: 'Shubh', tier: 'stable' },
  { id: 'anushka', name: 'Anushka', tier: 'stable' },
  { id: 'manisha', name: 'Manisha', tier: 'stable' },
  { id: 'vidya', name: 'Vidya', tier: 'stable' },
  { id: 'arya', name: 'Arya', tier: 'stable' },
  { id: 'abhilash', name: 'Abhilash', tier: 'stable' },
  { id: 'karun', name: 'Karun', tier: 'stable' },
  { id: 'hitesh', name: 'Hitesh', tier: 'stable' },
  { id: 'ritu-preview', name: 'Ritu (preview)', tier: 'preview' },
  { id: 'aditya-preview', name: 'Aditya (preview)', tier: 'preview' },
  { id: 'shubh-ng', name: 'Shubh (next generation)', tier: 'next-generation' },
  { id: 'anushka-ng', name: 'Anushka (next generation)', tier: 'next-generation' },
];

export const VOICE_IDS = VOICES.map((voice) => voice.id);

/** Preview and next-generation voices are reserved for the platform's own account. */
export function mayUseVoice(voiceId: string, account: { isPlatform: boolean }): boolean {
  const voice = VOICES.find((candidate) => candidate.id === voiceId);
  return !!voice && (voice.tier === 'stable' || account.isPlatform);
}

export const REPLY_LANGUAGES = [
  'hi-IN',
  'en-IN',
  'bn-IN',
  'gu-IN',
  'kn-IN',
  'ml-IN',
  'mr-IN',
  'od-IN',
  'pa-IN',
  'ta-IN',
  'te-IN',
  'en-US',
] as const;

export type ReplyLanguage = (typeof REPLY_LANGUAGES)[number];
