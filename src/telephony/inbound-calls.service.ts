import { Injectable } from '@nestjs/common';
import type { FormParams } from '../common/form-body';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { ConversationLimitException } from '../conversations/conversation-limits';
import { ConversationStarts } from '../conversations/conversation-starts.service';
import { PhoneCallsRepository } from './phone-calls.repository';
import type { WebhookNumberRow } from './phone-numbers.repository';
import { newStreamToken } from './stream-tokens';
import { CALL_LATER_SENTENCE, connectStream, hangUp, NO_AGENT_SENTENCE, NO_LISTENER_SENTENCE, sayAndHangUp, streamUrlOf } from './twiml';
import { callerPhone, callSidOf, single } from './twilio-params';

/** How long an inbound call's stream token opens its stream: the carrier connects it at once. */
export const INBOUND_TOKEN_SECONDS = 60;
const UNIQUE_VIOLATION = '23505';
const CALL_SID_INDEX = 'IDX_phone_calls_call_sid';

/**
 * The answer to a call to one of the account's numbers (its signature checked), in TwiML: one sentence and a
 * hang-up when nobody can take it (no agent, no speech-to-text, the account's caps), otherwise a conversation with
 * the number's agent and the `<Connect><Stream>` that joins the call to it, with a one-time token.
 */
@Injectable()
export class InboundCalls {
  private readonly streamUrl: string;
  private readonly canListen: boolean;

  constructor(
    private readonly starts: ConversationStarts,
    private readonly calls: PhoneCallsRepository,
    @InjectConfig() config: AppConfig,
  ) {
    this.streamUrl = streamUrlOf(config.publicBaseUrl);
    this.canListen = config.voice.sttProvider !== 'none';
  }

  async answer(number: WebhookNumberRow, params: FormParams): Promise<string> {
    const callSid = callSidOf(params);
    if (number.agent === null) return sayAndHangUp(NO_AGENT_SENTENCE);
    if (!this.canListen) return sayAndHangUp(NO_LISTENER_SENTENCE); // STT_PROVIDER=none: nobody could hear the caller
    const { token, hash } = newStreamToken();
    const call = {
      callType: 'inbound' as const,
      phone: callerPhone(single(params, 'From')),
      name: '',
      greeting: number.greeting,
      agentVersion: number.agentVersion,
    };
    try {
      await this.starts.startPhoneCall(number.accountId, number.agent, call, (sql, conversationId) =>
        this.calls.insert(
          number.accountId,
          { conversationId, phoneNumberId: number.id, callSid, streamTokenHash: hash, streamTokenSeconds: INBOUND_TOKEN_SECONDS },
          sql,
        ),
      );
    } catch (error) {
      if (error instanceof ConversationLimitException) return sayAndHangUp(CALL_LATER_SENTENCE);
      if (!isRetriedCall(error)) throw error;
      // The carrier asks again about a call it was answered for (a retry): the same conversation, a new token,
      // unless a stream already took the first one.
      const again = await this.calls.reissueToken(number.accountId, callSid, hash, INBOUND_TOKEN_SECONDS);
      return again ? connectStream(this.streamUrl, token) : hangUp();
    }
    return connectStream(this.streamUrl, token);
  }
}

/** The phone call of this CallSid exists already (the start's transaction was undone: nothing was added). */
const isRetriedCall = (error: unknown) => {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  return code === UNIQUE_VIOLATION && constraint === CALL_SID_INDEX;
};
