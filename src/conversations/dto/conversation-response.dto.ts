import { ApiDateTime, ApiUuid } from '../../common/api-formats';
import type { MessageSpeaker, ConversationStatus } from '../conversation.entity';
import type { MessageRow } from '../conversations.repository';
import type { StartedConversation } from '../conversation-starts.service';
import type { ConversationView } from '../conversation-talk.service';

export class StartedConversationResponse {
  /** Also the id of the call the conversation becomes. @example "5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90" */
  @ApiUuid()
  conversationId: string;
  /**
   * The bearer secret of this one conversation (`Authorization: Bearer <token>` on its routes), shown only here.
   * @example "vac_Jq2n8Jx0cW1sYvT5bK7dLmPz4RfH9gAe"
   */
  token: string;
  /** The site's greeting, already the conversation's first message; "" for none. @example "Namaste! Ask me anything." */
  greeting: string;
  /** When the conversation ends if no message comes before (each message moves it). @example "2026-11-22T09:20:02.123Z" */
  @ApiDateTime()
  expiresAt: string;
}

export const toStartedConversationResponse = (started: StartedConversation): StartedConversationResponse => ({
  conversationId: started.conversationId,
  token: started.token,
  greeting: started.greeting,
  expiresAt: started.expiresAt.toISOString(),
});

export class MessageReplyResponse {
  /** The agent's whole reply. @example "Yes, we deliver every day from 9 am to 6 pm." */
  text: string;
}

export class ConversationMessageResponse {
  /**
   * `tool`: what a tool the agent called did, between the visitor's message and the reply (`book_table {"people":2} →
   * {"confirmed":true}`, at most 1,000 characters). @example "user"
   */
  speaker: MessageSpeaker;
  /** @example "Do you deliver on Sundays?" */
  text: string;
  /** @example "2026-11-22T09:15:12.456Z" */
  @ApiDateTime()
  at: string;
}

export class ConversationResponse {
  /** @example "5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90" */
  @ApiUuid()
  conversationId: string;
  /** @example "active" */
  status: ConversationStatus;
  /** Every message in order, the greeting first when there is one. */
  messages: ConversationMessageResponse[];
}

const toMessageResponse = (message: MessageRow): ConversationMessageResponse => ({
  speaker: message.speaker,
  text: message.text,
  at: message.at.toISOString(),
});

export const toConversationResponse = (view: ConversationView): ConversationResponse => ({
  conversationId: view.conversationId,
  status: view.status,
  messages: view.messages.map(toMessageResponse),
});
