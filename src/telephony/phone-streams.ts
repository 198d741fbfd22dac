import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { EndedReason } from '../calls/call.entity';
import { ConversationEnds } from '../conversations/conversation-ends.service';
import { NotificationListener } from '../database/notification-listener';
import { CONVERSATION_ENDED_CHANNEL, VoiceLeasesRepository } from '../voice/voice-leases.repository';
import { PhoneCallsRepository } from './phone-calls.repository';
import { PhoneNumbersService } from './phone-numbers.service';
import { CarrierCredentials, TwilioRest } from './twilio-rest';
import { dial } from './twiml';

/** A media stream this instance holds: it is told when its conversation ended elsewhere. */
export interface HeldStream {
  conversationEnded(): void;
}

/**
 * How a phone conversation ends on the service's side, which hangs up its call: the agent (its end_call tool, or its
 * end route), its maximum length, idleness, a fault. The others end with the call already over (the caller hung up,
 * it was never answered, it was transferred).
 */
const HUNG_UP_BY_THE_SERVICE = new Set<EndedReason>(['agent-hung-up', 'visitor-ended', 'idle-timeout', 'max-duration', 'error']);

/**
 * The phone calls' hang-ups. A phone conversation ended by the service (whichever instance ended it: the end route
 * may be served by any) is hung up by the instance that holds its media stream, once the last sentence has played:
 * the ending instance tells it, itself directly, another through `NOTIFY conversation_ended` (to the holder of the
 * conversation's voice lease; the holder's lease renewal notices the end too, should the notification be missed).
 * When no live stream holds it (none yet, or its instance died), the ending instance asks the carrier itself.
 */
@Injectable()
export class PhoneStreams implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Telephony');
  private readonly held = new Map<string, HeldStream>();
  private readonly listener: NotificationListener;

  constructor(
    private readonly ends: ConversationEnds,
    private readonly leases: VoiceLeasesRepository,
    private readonly calls: PhoneCallsRepository,
    private readonly numbers: PhoneNumbersService,
    private readonly carrier: TwilioRest,
    dataSource: DataSource,
  ) {
    const url = (dataSource.options as { url: string }).url;
    this.listener = new NotificationListener(
      url,
      CONVERSATION_ENDED_CHANNEL,
      (id) => this.held.get(id)?.conversationEnded(),
      (error) =>
        this.logger.warn(
          { error: { name: (error as Error)?.name } },
          'Cannot listen for ended conversations (streams notice at their lease renewal)',
        ),
    );
  }

  onModuleInit(): void {
    this.ends.afterEnd(({ accountId, id, channel, reason, transferTo }) => {
      if (channel !== 'phone') return;
      if (reason === 'transferred' && transferTo) void this.transfer(accountId, id, transferTo);
      else if (HUNG_UP_BY_THE_SERVICE.has(reason)) void this.hangUp(accountId, id);
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.listener.stop();
  }

  /** A stream of this instance holds the conversation from now on (it has taken the conversation's voice lease). */
  hold(conversationId: string, stream: HeldStream): void {
    this.listener.start(); // on the first stream: an instance that never holds one keeps no connection for it
    this.held.set(conversationId, stream);
  }

  release(conversationId: string, stream: HeldStream): void {
    if (this.held.get(conversationId) === stream) this.held.delete(conversationId);
  }

  /**
   * Asks the carrier to end the conversation's call (`Status=completed`); a failure is logged (the call ends when its
   * stream closes). A transferred call is the dialled party's now: it is left alone.
   */
  async hangUpCarrierCall(accountId: number, conversationId: string): Promise<void> {
    try {
      const call = await this.calls.carrierCall(accountId, conversationId);
      if (!call?.callSid || call.transferred) return; // not placed by the carrier (yet), or moved: no call of ours to end
      const number = await this.numbers.getWithToken(accountId, call.phoneNumberId);
      await this.carrier.endCall(this.numbers.credentialsOf(accountId, number), call.callSid);
    } catch (error) {
      this.logger.warn(
        { conversationId, error: { name: (error as Error)?.name } },
        'A phone call could not be hung up through the carrier',
      );
    }
  }

  /**
   * The agent moved the call (transfer_call), its last sentence heard: the carrier is given `<Dial>` for the call, and
   * leaves the media stream (`stop`). Should the carrier refuse, the call is hung up rather than left silent.
   */
  private async transfer(accountId: number, conversationId: string, number: string): Promise<void> {
    const call = await this.calls.carrierCall(accountId, conversationId).catch(() => undefined);
    if (!call?.callSid) return; // a phone conversation has its CallSid once its stream runs: nothing to move otherwise
    let credentials: CarrierCredentials | undefined;
    try {
      credentials = this.numbers.credentialsOf(accountId, await this.numbers.getWithToken(accountId, call.phoneNumberId));
      await this.carrier.redirectCall(credentials, call.callSid, dial(number));
    } catch (error) {
      this.logger.warn({ conversationId, error: { name: (error as Error)?.name } }, 'A phone call could not be transferred; it is hung up');
      if (credentials) await this.carrier.endCall(credentials, call.callSid).catch(() => undefined);
    }
  }

  /** The conversation ended on the service's side: its stream's holder hangs up, or, with no holder, this instance. */
  private async hangUp(accountId: number, conversationId: string): Promise<void> {
    const local = this.held.get(conversationId);
    if (local) return local.conversationEnded();
    try {
      if (await this.leases.notifyHolder(accountId, conversationId)) return;
    } catch (error) {
      this.logger.warn({ conversationId, error: { name: (error as Error)?.name } }, "A phone call's stream could not be told it ended");
    }
    await this.hangUpCarrierCall(accountId, conversationId);
  }
}
