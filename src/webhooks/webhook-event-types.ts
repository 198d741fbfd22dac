/** The events a webhook can subscribe to (contract section 11). */
export const WEBHOOK_EVENT_TYPES = ['call.created', 'call.recording.ready', 'call.deleted'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The event `POST /webhooks/{webhookId}/test` sends; never subscribed to. */
export const PING_EVENT = 'ping';

/** What a delivery log row can say about its event. */
export type DeliveredEventType = WebhookEventType | typeof PING_EVENT;

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Most webhooks one account may have. */
export const MAX_WEBHOOKS_PER_ACCOUNT = 20;
