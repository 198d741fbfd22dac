import type { RequestedCall, ToolFunction } from '../../tools/tool-calls';
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
  /** The agent's tools, when it has some and the answerer can call them (the built-in answerer calls none). */
  tools?: ReplyTools;
}

/** The tools a reply may call (src/tools' TurnTools): what the model is offered, and how its calls are run. */
export interface ReplyTools {
  readonly functions: ToolFunction[];
  /** Runs the calls of one answer at once: each one's result for the model, in order. Never rejects. */
  run(calls: RequestedCall[]): Promise<string[]>;
}

/** Rounds of tool calls in one reply, at most: a model still calling tools after them gets the visitor the apology. */
export const MAX_TOOL_ROUNDS = 5;

/**
 * Produces a reply, piece by piece as it is generated. Throws AnswererFailure when it cannot: the caller then
 * gives the visitor the fixed apology (and logs only the failure's kind). When `signal` aborts (the visitor
 * interrupted a spoken reply), it stops at once, ends quietly and makes no further request.
 */
export abstract class Answerer {
  abstract reply(request: ReplyRequest, signal?: AbortSignal): AsyncIterable<string>;
}

/** Why a provider gave no reply; deliberately only a kind and an HTTP status: provider text is never kept. */
export type FailureKind = 'http-status' | 'timeout' | 'connection' | 'invalid-response' | 'incomplete' | 'empty' | 'too-many-tool-rounds';

/** A provider's failure (replies here, speech in src/voice): logged by its kind and status alone. */
export class ProviderFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    readonly status?: number,
    what = 'The provider',
  ) {
    super(`${what} failed (${kind}${status ? ` ${status}` : ''})`);
  }
}

export class AnswererFailure extends ProviderFailure {
  constructor(kind: FailureKind, status?: number) {
    super(kind, status, 'The reply provider');
  }
}

/** What the visitor reads when the provider fails, stalls or answers garbage. */
export const APOLOGY = 'Sorry, I cannot answer right now. Please try again in a moment.';

/** The built-in answerer's reply when no passage matches the visitor's message. */
export const QUESTION_NOTED = 'Thank you for your question. I have noted it, and someone from our team will get back to you.';
