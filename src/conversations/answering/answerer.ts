import { Passage } from './passages';

/** One turn of the conversation as an answerer sees it. */
export interface Turn {
  speaker: 'agent' | 'user';
  text: string;
}

/** Everything a reply is made from. */
export interface ReplyRequest {
  agent: { model: string; systemPrompt: string; language: string };
  /** Best first; at most RAG_PASSAGES. */
  passages: Passage[];
  /** The conversation so far (at most the last 20 turns), ending with the visitor's message to answer. */
  turns: Turn[];
}

/**
 * Produces a reply, piece by piece as it is generated. Throws AnswererFailure when it cannot: the caller then
 * gives the visitor the fixed apology (and logs only the failure's kind).
 */
export abstract class Answerer {
  abstract reply(request: ReplyRequest): AsyncIterable<string>;
}

/** Why a provider gave no reply; deliberately only a kind and an HTTP status: provider text is never kept. */
export type FailureKind = 'http-status' | 'timeout' | 'connection' | 'invalid-response' | 'incomplete' | 'empty';

export class AnswererFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    readonly status?: number,
  ) {
    super(`The reply provider failed (${kind}${status ? ` ${status}` : ''})`);
  }
}

/** What the visitor reads when the provider fails, stalls or answers garbage. */
export const APOLOGY = 'Sorry, I cannot answer right now. Please try again in a moment.';

/** The built-in answerer's reply when no passage matches the visitor's message. */
export const QUESTION_NOTED = 'Thank you for your question. I have noted it, and someone from our team will get back to you.';
