import { Injectable } from '@nestjs/common';
import { ConversationEnds } from '../conversations/conversation-ends.service';
import { UnansweredOutcome } from '../conversations/conversation-calls.service';
import type { FormParams } from '../common/form-body';
import { PhoneCallsRepository } from './phone-calls.repository';
import type { WebhookNumberRow } from './phone-numbers.repository';
import { callDurationOf, callSidOf, callStatusOf, CallStatus } from './twilio-params';

/** The final statuses of a call that was never answered, and the call they make (`canceled` counts as `no-answer`). */
const UNANSWERED: Partial<Record<CallStatus, UnansweredOutcome>> = {
  busy: 'busy',
  'no-answer': 'no-answer',
  failed: 'failed',
  canceled: 'no-answer',
};

/**
 * What the carrier's status callbacks mean for a call. Each status is recorded once per CallSid (a repeated
 * callback changes nothing); then what the call's statuses so far say is applied, whatever order they came in:
 * - `in-progress`: the call was answered (its stream token opens it a minute more at most);
 * - `busy`, `no-answer`, `failed` or `canceled` for a call never answered: its conversation ends, and becomes a
 *   call with that status (`canceled` as `no-answer`), no duration and no transcript, with its `call.created`;
 * - `completed` for a call whose media stream never connected: its conversation ends (the stream, when it
 *   connected, ends its conversation itself).
 * A status may come before the carrier's answer to the request that placed the call (which gives its CallSid):
 * it is applied once that answer is recorded (OutboundCalls calls `settle`). Ending a conversation happens once,
 * however many callbacks arrive at once.
 */
@Injectable()
export class CallProgress {
  constructor(
    private readonly calls: PhoneCallsRepository,
    private readonly ends: ConversationEnds,
  ) {}

  /** A status callback of the number's account (its signature checked): a 400 for one without a call id or a known status. */
  async report(number: Pick<WebhookNumberRow, 'accountId'>, params: FormParams): Promise<void> {
    const callSid = callSidOf(params);
    const status = callStatusOf(params);
    if (await this.calls.recordStatus(number.accountId, callSid, status, callDurationOf(params))) {
      await this.settle(number.accountId, callSid);
    }
  }

  /** Applies what the statuses recorded for `callSid` say about its call, if the call is known (yet). */
  async settle(accountId: number, callSid: string): Promise<void> {
    const call = await this.calls.progress(accountId, callSid);
    if (!call) return;
    const statuses = new Set(call.statuses as CallStatus[]);
    if (statuses.has('in-progress') && call.answeredAt === null) await this.calls.markAnswered(accountId, call.conversationId);
    const answered = statuses.has('in-progress') || call.answeredAt !== null || call.streamConnectedAt !== null;
    const unanswered = [...statuses].map((status) => UNANSWERED[status]).find((outcome) => outcome !== undefined);
    if (unanswered && !answered) {
      await this.calls.expireToken(accountId, call.conversationId);
      await this.ends.endUnanswered(accountId, call.conversationId, unanswered);
    } else if (statuses.has('completed') && call.streamConnectedAt === null) {
      await this.calls.expireToken(accountId, call.conversationId);
      await this.ends.endNow(accountId, call.conversationId, 'caller-hung-up');
    }
  }
}
