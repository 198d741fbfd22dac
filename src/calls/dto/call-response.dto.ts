import { ApiProperty } from '@nestjs/swagger';
import { ApiDateTime, ApiUuid } from '../../common/api-formats';
import {
  CallLatency,
  ENDED_REASONS,
  EndedReason,
  TRANSCRIPT_SPEAKERS,
  TranscriptSpeaker,
  TranscriptTurn,
  TurnLatency,
} from '../call.entity';
import { CallDetailRow, CallRow } from '../calls.repository';
import { creditsUsed } from '../credits';

/** A call as listed by `GET /calls`: no transcript, no credits. */
export class CallListItemResponse {
  /** @example "5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90" */
  @ApiUuid()
  id: string;
  /** Caller name; "" when unknown. @example "Priya Sharma" */
  name: string;
  /** Caller number; "" when unknown. @example "+91-98765-43210" */
  phone: string;
  /** "" when unknown. @example "priya@example.com" */
  email: string;
  /** Outcome or lead status. @example "qualified" */
  status: string;
  /** Status of the call itself. @example "completed" */
  callStatus: string;
  /** @example "positive" */
  sentiment: string;
  /** @example "phone" */
  channel: string;
  /** @example "inbound" */
  callType: string;
  /** @example "https://shop.example.in/contact" */
  website: string;
  /** Name of the agent that handled the call (kept after the agent is deleted). @example "Reception desk" */
  agent: string;
  /** The agent's id (kept after the agent is deleted); null when the call had no agent. @example 42 */
  @ApiProperty({ type: 'integer', nullable: true })
  agentId: number | null;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  callDate: string;
  /** @example 95 */
  durationSeconds: number;
  /** @example "hi-IN" */
  replyLanguage: string;
  /** Whether audio exists (see `GET /calls/{callId}/recording`). @example false */
  hasRecording: boolean;
  /** Any JSON value, or null. */
  @ApiProperty({ nullable: true, description: 'Any JSON value, or null.', example: { rating: 5 } })
  feedback: unknown;
  /** @example {"city": "Pune"} */
  extractedData: Record<string, unknown>;
}

/** Where the time of one spoken turn went, in milliseconds (to a tenth). */
export class TurnLatencyResponse {
  /** The silence the service waited for before taking the visitor's turn as ended (VOICE_END_OF_TURN_MS, in audio time); 0 for a typed message. @example 700 */
  endOfTurn: number;
  /** The speech-to-text request, from the end of the turn to its transcript; 0 for a typed message. @example 310.2 */
  transcription: number;
  /** From the visitor's message accepted to the model's first token (the knowledge looked up included). @example 240.6 */
  firstToken: number;
  /** From the first synthesis request of the reply to its first audio (the voice's own time). @example 120.4 */
  firstAudio: number;
  /**
   * From the visitor's last sound to the agent's first audio sent: `endOfTurn` plus the service's time from the end of
   * the turn to that audio, which holds the other three and whatever was between them (at least their sum). @example 1412.5
   */
  total: number;
}

/** A spoken call's latency: its timed turns summed up by their `total` (percentiles by nearest rank). */
export class CallLatencyResponse {
  /** Agent entries of the transcript that have a `latencyMs`. @example 6 */
  @ApiProperty({ type: 'integer' })
  turns: number;
  /** The median `total`, in ms; null when no turn was timed. @example 1412.5 */
  @ApiProperty({ type: 'number', nullable: true })
  p50Ms: number | null;
  /** The 90th percentile of `total`, in ms; null when no turn was timed. @example 1980.3 */
  @ApiProperty({ type: 'number', nullable: true })
  p90Ms: number | null;
  /** The slowest turn's `total`, in ms; null when no turn was timed. @example 2210 */
  @ApiProperty({ type: 'number', nullable: true })
  maxMs: number | null;
}

export class TranscriptTurnResponse {
  @ApiProperty({ enum: TRANSCRIPT_SPEAKERS, example: 'user' })
  speaker: TranscriptSpeaker;
  /** @example "मुझे 2BHK फ्लैट चाहिए" */
  text: string;
  /** Where it starts in the call's recording, in seconds (three decimals): only in the transcript of a spoken call. @example 4.52 */
  @ApiProperty({ required: false })
  startSeconds?: number;
  /**
   * Where the time of the turn this entry answers went: only on an agent entry of a spoken call whose reply's first
   * audio was sent (not on the greeting, nor on an apology: for a visitor who was not heard, or a model that failed
   * before its first token).
   */
  @ApiProperty({ type: TurnLatencyResponse, required: false })
  latencyMs?: TurnLatencyResponse;
}

/** One call, with its transcript and the credits it used. */
export class CallResponse extends CallListItemResponse {
  /** round(durationSeconds / 60 × CREDITS_PER_MINUTE, 2). @example 1.58 */
  creditsUsed: number;
  transcript: TranscriptTurnResponse[];
  /**
   * How the call ended: `caller-hung-up`, `agent-hung-up`, `transferred`, `visitor-ended` (a widget or API
   * visitor's end), `idle-timeout`, `max-duration`, `busy`, `no-answer`, `failed`, `error`; "" for a call posted
   * without one and for calls made before it was kept. On the detail only (and so in the webhooks' `data`).
   */
  @ApiProperty({ enum: [...ENDED_REASONS, ''], example: 'visitor-ended' })
  endedReason: EndedReason | '';
  /** The agent version that answered (`GET /agents/{agentId}/versions/{version}`); null when none (the agent had none published, a test, a posted call). On the detail only. @example 3 */
  @ApiProperty({ type: 'integer', nullable: true })
  agentVersion: number | null;
  /**
   * The latency of a spoken call's turns (the `total` of every transcript entry with a `latencyMs`), stored as the call
   * was made: `turns: 0` with null figures when none was timed. Null for a call that was not spoken (a text
   * conversation, a call posted through the API, a call made before it was kept). On the detail only.
   */
  @ApiProperty({ type: CallLatencyResponse, nullable: true })
  latency: CallLatencyResponse | null;
}

/** A call with its computed credits, as the service returns it for the single-call responses. */
export interface CallDetail {
  call: CallDetailRow;
  creditsUsed: number;
}

/** The fields of a list item in the list's order (contract section 6): the export's CSV columns. */
export const CALL_LIST_ITEM_FIELDS = [
  'id',
  'name',
  'phone',
  'email',
  'status',
  'callStatus',
  'sentiment',
  'channel',
  'callType',
  'website',
  'agent',
  'agentId',
  'callDate',
  'durationSeconds',
  'replyLanguage',
  'hasRecording',
  'feedback',
  'extractedData',
] as const satisfies readonly (keyof CallListItemResponse)[];

export function toCallListItemResponse(call: CallRow): CallListItemResponse {
  return {
    id: call.id,
    name: call.name,
    phone: call.phone,
    email: call.email,
    status: call.status,
    callStatus: call.callStatus,
    sentiment: call.sentiment,
    channel: call.channel,
    callType: call.callType,
    website: call.website,
    agent: call.agent,
    agentId: call.agentId,
    callDate: call.callDate.toISOString(),
    durationSeconds: call.durationSeconds,
    replyLanguage: call.replyLanguage,
    hasRecording: call.hasRecording,
    feedback: call.feedback ?? null,
    extractedData: call.extractedData,
  };
}

/** A call with the credits it used at this rate (CREDITS_PER_MINUTE). */
export function withCredits(call: CallDetailRow, creditsPerMinute: number): CallDetail {
  return { call, creditsUsed: creditsUsed(call.durationSeconds, creditsPerMinute) };
}

export function toCallResponse(detail: CallDetail): CallResponse {
  return {
    ...toCallListItemResponse(detail.call),
    creditsUsed: detail.creditsUsed,
    transcript: detail.call.transcript.map(toTranscriptTurnResponse),
    endedReason: detail.call.endedReason,
    agentVersion: detail.call.agentVersion,
    latency: detail.call.latency && toCallLatencyResponse(detail.call.latency),
  };
}

function toTranscriptTurnResponse({ speaker, text, startSeconds, latencyMs }: TranscriptTurn): TranscriptTurnResponse {
  const entry: TranscriptTurnResponse = { speaker, text };
  if (startSeconds !== undefined) entry.startSeconds = startSeconds;
  if (latencyMs) entry.latencyMs = toTurnLatencyResponse(latencyMs);
  return entry;
}

const toTurnLatencyResponse = ({ endOfTurn, transcription, firstToken, firstAudio, total }: TurnLatency): TurnLatencyResponse => ({
  endOfTurn,
  transcription,
  firstToken,
  firstAudio,
  total,
});

const toCallLatencyResponse = ({ turns, p50Ms, p90Ms, maxMs }: CallLatency): CallLatencyResponse => ({ turns, p50Ms, p90Ms, maxMs });
