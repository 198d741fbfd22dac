import { ReplyLanguage } from '../../agents/voices';

/** What a voice says when the dashboard's "hear this voice" button is pressed, in each reply language. */
export const PREVIEW_SENTENCES: Record<ReplyLanguage, string> = {
  'hi-IN': 'नमस्ते! बताइए, आज मैं आपकी क्या मदद करूँ?',
  'en-IN': 'Hello! How can I help you today?',
  'en-US': 'Hello! How can I help you today?',
  'bn-IN': 'নমস্কার! আজ আমি আপনাকে কীভাবে সাহায্য করতে পারি?',
  'gu-IN': 'નમસ્તે! આજે હું તમારી કેવી રીતે મદદ કરી શકું?',
  'kn-IN': 'ನಮಸ್ಕಾರ! ಇಂದು ನಾನು ನಿಮಗೆ ಹೇಗೆ ಸಹಾಯ ಮಾಡಬಹುದು?',
  'ml-IN': 'നമസ്കാരം! ഇന്ന് ഞാൻ നിങ്ങളെ എങ്ങനെ സഹായിക്കട്ടെ?',
  'mr-IN': 'नमस्कार! आज मी तुम्हाला कशी मदत करू?',
  'od-IN': 'ନମସ୍କାର! ଆଜି ମୁଁ ଆପଣଙ୍କୁ କିପରି ସାହାଯ୍ୟ କରିପାରିବି?',
  'pa-IN': 'ਸਤ ਸ੍ਰੀ ਅਕਾਲ! ਦੱਸੋ, ਅੱਜ ਮੈਂ ਤੁਹਾਡੀ ਕੀ ਮਦਦ ਕਰਾਂ?',
  'ta-IN': 'வணக்கம்! இன்று நான் உங்களுக்கு எப்படி உதவ முடியும்?',
  'te-IN': 'నమస్కారం! ఈరోజు నేను మీకు ఎలా సహాయం చేయగలను?',
};
