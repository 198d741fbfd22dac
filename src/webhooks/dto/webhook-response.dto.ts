import { ApiProperty } from '@nestjs/swagger';
import { ApiDateTime, ApiUuid } from '../../common/api-formats';
import {
  DELIVERY_STATUSES,
  DeliveredEventType,
  DeliveryStatus,
  PING_EVENT,
  WEBHOOK_EVENT_TYPES,
  WebhookEventType,
} from '../webhook-event-types';
import { publicEventId } from '../webhook-payload';
import { DeliveryRow, WebhookRow } from '../webhooks.repository';

export class WebhookResponse {
  /** @example 7 */
  @ApiProperty({ type: 'integer' })
  id: number;
  /** @example "https://crm.example.com/hooks/voice" */
  url: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES, isArray: true, example: ['call.created', 'call.deleted'] })
  events: WebhookEventType[];
  /** @example "CRM sync" */
  description: string;
  /** @example true */
  enabled: boolean;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  updatedAt: string;
}

/** The webhook as created, with its signing secret: shown this once only. */
export class CreatedWebhookResponse extends WebhookResponse {
  /**
   * The signing secret (`whsec_` + base64 of 32 random bytes): verify deliveries with it (Standard Webhooks).
   * Shown only here and by rotate-secret; keep it safe. @example "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD6MnAWTVRhDE="
   */
  secret: string;
}

export class WebhookSecretResponse {
  /**
   * The new signing secret, shown this once. For 24 hours deliveries carry signatures made with both the
   * new and the previous secret. @example "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD6MnAWTVRhDE="
   */
  secret: string;
}

export class WebhookDeliveryResponse {
  /** @example "7d1e0f4a-2b3c-4d5e-8f9a-0b1c2d3e4f5a" */
  @ApiUuid()
  id: string;
  @ApiProperty({ enum: [...WEBHOOK_EVENT_TYPES, PING_EVENT], example: 'call.created' })
  event: DeliveredEventType;
  /** The event's id: the `webhook-id` header and the body's `id`, the same on every attempt. @example "evt_0b8e3c1a3f5e4a8e9d1c6f2b7a9e4c21" */
  eventId: string;
  @ApiProperty({ enum: DELIVERY_STATUSES, example: 'pending' })
  status: DeliveryStatus;
  /** Attempts made so far (automatic and by hand). @example 2 */
  @ApiProperty({ type: 'integer' })
  attempts: number;
  /** The HTTP status of the last answer; null before the first answer, or when the last attempt got none. @example 500 */
  @ApiProperty({ type: 'integer', nullable: true, example: 500 })
  lastStatusCode: number | null;
  /** Why the last attempt failed (a short, sanitised excerpt of the answer, or what went wrong); null otherwise. @example "HTTP 500: upstream unavailable" */
  @ApiProperty({ type: String, nullable: true, example: 'HTTP 500: upstream unavailable' })
  lastError: string | null;
  /** When the next attempt is due, while pending; null once succeeded or failed. @example "2026-11-22T09:16:02.123Z" */
  @ApiDateTime({ nullable: true, example: '2026-11-22T09:16:02.123Z' })
  nextAttemptAt: string | null;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
}

export function toWebhookResponse(webhook: WebhookRow): WebhookResponse {
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events,
    description: webhook.description,
    enabled: webhook.enabled,
    createdAt: webhook.createdAt.toISOString(),
    updatedAt: webhook.updatedAt.toISOString(),
  };
}

/** A new webhook and its signing secret, as WebhooksService.create makes them. */
export interface CreatedWebhook {
  webhook: WebhookRow;
  secret: string;
}

export function toCreatedWebhookResponse({ webhook, secret }: CreatedWebhook): CreatedWebhookResponse {
  return { ...toWebhookResponse(webhook), secret };
}

export function toWebhookSecretResponse(secret: string): WebhookSecretResponse {
  return { secret };
}

export function toWebhookDeliveryResponse(delivery: DeliveryRow): WebhookDeliveryResponse {
  return {
    id: delivery.id,
    event: delivery.event,
    eventId: publicEventId(delivery.eventId),
    status: delivery.status,
    attempts: delivery.attempts,
    lastStatusCode: delivery.lastStatusCode,
    lastError: delivery.lastError,
    nextAttemptAt: delivery.nextAttemptAt?.toISOString() ?? null,
    createdAt: delivery.createdAt.toISOString(),
  };
}
