import { Module } from '@nestjs/common';
import { WebhookDeliveries } from './webhook-deliveries';
import { WebhookEvents } from './webhook-events.service';
import { WebhookRelay } from './webhook-relay';
import { WebhookRetention } from './webhook-retention';
import { WebhookTargets } from './webhook-targets';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/**
 * Webhooks: the management API, the event outbox other modules write to (WebhookEvents), its relay, delivery, and
 * retention; and WebhookTargets, the one way signed requests reach a customer's URL (tools send theirs through it).
 */
@Module({
  controllers: [WebhooksController],
  providers: [WebhooksService, WebhooksRepository, WebhookTargets, WebhookDeliveries, WebhookRelay, WebhookEvents, WebhookRetention],
  exports: [WebhookEvents, WebhookTargets],
})
export class WebhooksModule {}
