import { randomUUID } from 'node:crypto';
import type { CallResponse } from '../calls/dto/call-response.dto';
import type { NewEvent } from './webhooks.repository';
import { DeliveredEventType } from './webhook-event-types';

/** What other modules report: a call event, with `data` exactly as `GET /calls/{callId}` returns the call. */
export type CallEvent =
  { type: 'call.created' | 'call.recording.ready'; data: CallResponse } | { type: 'call.deleted'; data: { id: string } };

/** The public id of an event (`webhook-id`, and `id` in the body): `evt_` + the row's uuid without dashes. */
export const publicEventId = (uuid: string) => `evt_${uuid.replace(/-/g, '')}`;

/**
 * A new event with its body: `{ id, type, createdAt, data }` as JSON text, written once and sent (and signed)
 * as these exact bytes on every attempt.
 */
export function newEvent(type: DeliveredEventType, data: object, callId: string | null): NewEvent {
  const id = randomUUID();
  const createdAt = new Date();
  const body = JSON.stringify({ id: publicEventId(id), type, createdAt: createdAt.toISOString(), data });
  return { id, type, callId, body, createdAt };
}
