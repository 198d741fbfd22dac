import type { AppConfig } from '../config/config';
import type { TurnLimits } from './conversations.repository';

/** The contract's limit: the 101st visitor message is a 409. */
export const MAX_VISITOR_MESSAGES = 100;
/** The turns a provider sees, at most (the latest last). */
export const HISTORY_TURNS = 20;
/** A reply in progress is taken as abandoned (its instance died) this long after LLM_TIMEOUT_MS. */
const STALE_REPLY_MARGIN_SECONDS = 15;

/** When an active conversation is idle, and so to be ended: no message for idleSeconds, and no reply still in progress. */
export type IdleRule = Pick<TurnLimits, 'idleSeconds' | 'staleReplySeconds'>;

export function idleRule(config: AppConfig): IdleRule {
  return {
    idleSeconds: config.conversationIdleSeconds,
    staleReplySeconds: Math.ceil(config.llm.timeoutMs / 1000) + STALE_REPLY_MARGIN_SECONDS,
  };
}

/** The limits a visitor's message is accepted under (ConversationsRepository.acceptMessage). */
export function turnLimits(config: AppConfig): TurnLimits {
  return { maxVisitorMessages: MAX_VISITOR_MESSAGES, ...idleRule(config) };
}
