/** Ends a conversation at its idle time, or waits again when messages moved it (one job per conversation). */
export const JOB_END_IF_IDLE = 'conversations.end-if-idle';
/** The idle sweep behind those jobs (cron, once a minute across all instances). */
export const JOB_END_IDLE = 'conversations.end-idle';
/** The post-call analysis of an ended conversation's call. */
export const JOB_ANALYSE = 'conversations.analyse';

/** The data of a job about one conversation. */
export interface ConversationRef {
  accountId: number;
  conversationId: string;
}
