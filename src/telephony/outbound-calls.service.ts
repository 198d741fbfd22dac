import { ConflictException, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { ConversationStarts } from '../conversations/conversation-starts.service';
import { placementFailure } from './carrier-failures';
import { CallProgress } from './call-progress.service';
import { PlaceCallDto } from './dto/place-call.dto';
import { PlacedCall } from './dto/placed-call-response.dto';
import { PhoneCallsRepository } from './phone-calls.repository';
import { PhoneNumbersService } from './phone-numbers.service';
import { newStreamToken } from './stream-tokens';
import { connectStream, streamUrlOf, webhookUrlsOf } from './twiml';
import { TwilioRest } from './twilio-rest';

/**
 * How long an outbound call's stream token may open its stream at most: it is valid until the call is answered
 * (then a minute more) or fails (then no more), and this bounds a call whose statuses never come (the carrier
 * queues calls beyond the account's calls per second, then lets the phone ring 30 s).
 */
export const OUTBOUND_TOKEN_SECONDS = 600;

/**
 * Calls the agents place (contract section 17): a conversation with the agent (the account's caps and
 * PHONE_MAX_ACTIVE_CALLS: 429), then the carrier asked to dial `to` from the number, running the TwiML that joins
 * the call to that conversation's stream once answered. When the carrier refuses (422) or fails (502), the
 * conversation is removed: nothing is saved.
 */
@Injectable()
export class OutboundCalls {
  private readonly publicBaseUrl: string;
  private readonly canListen: boolean;

  constructor(
    private readonly numbers: PhoneNumbersService,
    private readonly agents: AgentsService,
    private readonly starts: ConversationStarts,
    private readonly calls: PhoneCallsRepository,
    private readonly carrier: TwilioRest,
    private readonly progress: CallProgress,
    @InjectConfig() config: AppConfig,
  ) {
    this.publicBaseUrl = config.publicBaseUrl;
    this.canListen = config.voice.sttProvider !== 'none';
  }

  async place(accountId: number, phoneNumberId: number, dto: PlaceCallDto): Promise<PlacedCall> {
    const number = await this.numbers.getWithToken(accountId, phoneNumberId);
    if (!this.canListen) {
      throw new ServiceUnavailableException(
        'Phone calls need speech-to-text, and this service has none: set STT_PROVIDER (openai or sarvam)',
      );
    }
    const agentId = dto.agentId ?? number.agentId;
    if (agentId === null)
      throw new ConflictException(`Phone number ${phoneNumberId} has no agent: give agentId, or set the number's agent`);
    const agent = await this.agents.getReferenced(accountId, agentId);
    const credentials = this.numbers.credentialsOf(accountId, number);
    const { token, hash } = newStreamToken();
    // The number's pin is of the number's agent: a call placed with another agent runs that one's published version.
    const agentVersion = agentId === number.agentId ? number.agentVersion : null;
    const call = { callType: 'outbound' as const, phone: dto.to, name: dto.name!, greeting: dto.greeting!, agentVersion };
    const { conversationId } = await this.starts.startPhoneCall(accountId, agent, call, (sql, id) =>
      this.calls.insert(
        accountId,
        { conversationId: id, phoneNumberId, callSid: null, streamTokenHash: hash, streamTokenSeconds: OUTBOUND_TOKEN_SECONDS },
        sql,
      ),
    );
    let callSid: string;
    try {
      callSid = await this.carrier.placeCall(credentials, {
        to: dto.to,
        from: number.number,
        twiml: connectStream(streamUrlOf(this.publicBaseUrl), token),
        statusCallback: webhookUrlsOf(this.publicBaseUrl, phoneNumberId).statusUrl,
      });
    } catch (error) {
      // Left behind if this fails too (the database lost meanwhile), it ends when idle, without a call (nothing was said).
      await this.starts.abandon(accountId, conversationId).catch(() => undefined);
      throw placementFailure(error);
    }
    await this.calls.attachCallSid(accountId, conversationId, callSid);
    await this.progress.settle(accountId, callSid); // statuses that came before this answer
    return { callId: conversationId, conversationId, status: 'queued' };
  }
}
