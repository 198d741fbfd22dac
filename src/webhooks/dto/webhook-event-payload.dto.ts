import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { CallResponse } from '../../calls/dto/call-response.dto';
import { ApiDateTime, ApiUuid } from '../../common/api-formats';

/**
 * The bodies the service POSTs to webhooks, one schema per event (listed under `webhooks` in the OpenAPI
 * document). Every delivery carries the Standard Webhooks headers `webhook-id` (the body's `id`, the same on
 * every retry), `webhook-timestamp` and `webhook-signature`.
 */
export class EventEnvelope {
  /** The event's id, also sent as `webhook-id`: deduplicate on it. @example "evt_0b8e3c1a3f5e4a8e9d1c6f2b7a9e4c21" */
  id: string;
  /** When the event happened (retries keep it). @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
}

@ApiSchema({ description: 'A call was recorded (not a test call). `data` is the call exactly as `GET /calls/{callId}` returns it.' })
export class CallCreatedEvent extends EventEnvelope {
  @ApiProperty({ enum: ['call.created'] })
  type: 'call.created';
  data: CallResponse;
}

@ApiSchema({
  description: 'A recording upload of the call was committed. `data` is the call exactly as `GET /calls/{callId}` returns it then.',
})
export class CallRecordingReadyEvent extends EventEnvelope {
  @ApiProperty({ enum: ['call.recording.ready'] })
  type: 'call.recording.ready';
  data: CallResponse;
}

export class DeletedCallData {
  /** The deleted call's id. @example "5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90" */
  @ApiUuid()
  id: string;
}

@ApiSchema({ description: "The call was deleted (its transcript and recording are gone; earlier events' stored payloads are erased)." })
export class CallDeletedEvent extends EventEnvelope {
  @ApiProperty({ enum: ['call.deleted'] })
  type: 'call.deleted';
  data: DeletedCallData;
}

export class PingData {
  /** The webhook tested. @example 7 */
  @ApiProperty({ type: 'integer' })
  webhookId: number;
}

@ApiSchema({ description: "Sent by `POST /webhooks/{webhookId}/test`, whatever the webhook's events." })
export class PingEvent extends EventEnvelope {
  @ApiProperty({ enum: ['ping'] })
  type: 'ping';
  data: PingData;
}

/** The event schemas, by event type. */
export const WEBHOOK_EVENT_SCHEMAS = {
  'call.created': CallCreatedEvent,
  'call.recording.ready': CallRecordingReadyEvent,
  'call.deleted': CallDeletedEvent,
  ping: PingEvent,
};
