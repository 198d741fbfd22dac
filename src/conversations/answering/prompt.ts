import type { ReplyLanguage } from '../../agents/voices';
import { ReplyRequest } from './answerer';

/** The agent's instructions when its systemPrompt is blank (contract section 4). */
export const GENERIC_PROMPT =
  'You are a helpful, friendly assistant who answers the visitors of a business on its behalf. Keep replies short and ' +
  'conversational. Answer from the knowledge passages below when they cover the question; never invent facts, prices or ' +
  'promises: when you do not know, say so and offer to note the question for the team.';

const LANGUAGE_NAMES: Record<ReplyLanguage, string> = {
  'hi-IN': 'Hindi',
  'en-IN': 'English (India)',
  'bn-IN': 'Bengali',
  'gu-IN': 'Gujarati',
  'kn-IN': 'Kannada',
  'ml-IN': 'Malayalam',
  'mr-IN': 'Marathi',
  'od-IN': 'Odia',
  'pa-IN': 'Punjabi',
  'ta-IN': 'Tamil',
  'te-IN': 'Telugu',
  'en-US': 'English (United States)',
};

export const languageName = (code: string) => LANGUAGE_NAMES[code as ReplyLanguage] ?? code;

/** The system message: the agent's prompt (or the generic one), its reply language, and the passages found. */
export function systemMessage({ agent, passages }: Pick<ReplyRequest, 'agent' | 'passages'>): string {
  const parts = [agent.systemPrompt.trim() || GENERIC_PROMPT, `Always reply in ${languageName(agent.language)} (${agent.language}).`];
  if (passages.length) {
    parts.push(
      "Knowledge passages that may answer the visitor's latest message, best first:",
      ...passages.map((passage, index) => `[${index + 1}] From "${passage.sourceName}":\n${passage.text}`),
    );
  }
  return parts.join('\n\n');
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** The Chat Completions messages of a reply: the system message, then the turns. */
export function chatMessages(request: ReplyRequest): ChatMessage[] {
  return [
    { role: 'system', content: systemMessage(request) },
    ...request.turns.map((turn): ChatMessage => ({ role: turn.speaker === 'user' ? 'user' : 'assistant', content: turn.text })),
  ];
}
