import { BadRequestException, ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { definedFields } from '../common/defined-fields';
import { Database } from '../database/database';
import { CreateWebhookDto } from './dto/create-webhook.dto';
import { UpdateWebhookDto } from './dto/update-webhook.dto';
import { WebhookDeliveries } from './webhook-deliveries';
import { MAX_WEBHOOKS_PER_ACCOUNT, PING_EVENT, WEBHOOK_EVENT_TYPES, WebhookEventType } from './webhook-event-types';
import { newEvent } from './webhook-payload';
import { generateWebhookSecret } from './webhook-signature';
import { SECRET_OVERLAP_HOURS } from './signing-secrets';
import { WebhookTargets } from './webhook-targets';
import { DeliveryRow, WebhookFields, WebhookRow, WebhooksRepository } from './webhooks.repository';

const notFound = (id: number) => new NotFoundException(`Webhook ${id} not found`);
const deliveryNotFound = (id: string) => new NotFoundException(`Delivery ${id} not found`);

/** The events in their canonical order, each once. */
const canonicalEvents = (events: WebhookEventType[]) => WEBHOOK_EVENT_TYPES.filter((type) => events.includes(type));

/** The webhooks' rules (the URL policy, the limit per account, secrets, test pings, retries by hand); the SQL is WebhooksRepository's. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly targets: WebhookTargets,
    private readonly deliveries: WebhookDeliveries,
    private readonly database: Database,
  ) {}

  list(accountId: number): Promise<WebhookRow[]> {
    return this.webhooks.list(accountId);
  }

  async get(accountId: number, id: number): Promise<WebhookRow> {
    return (await this.webhooks.get(accountId, id)) ?? Promise.reject(notFound(id));
  }

  async create(accountId: number, dto: CreateWebhookDto): Promise<{ webhook: WebhookRow; secret: string }> {
    const fields: WebhookFields = {
      url: await this.targets.checkUrl(dto.url),
      events: canonicalEvents(dto.events),
      description: dto.description!,
      enabled: dto.enabled!,
    };
    const secret = generateWebhookSecret();
    const webhook = await this.webhooks.insert(accountId, fields, secret);
    if (!webhook) throw new BadRequestException(`An account can have at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks; delete one first`);
    return { webhook, secret };
  }

  async update(accountId: number, id: number, dto: UpdateWebhookDto): Promise<WebhookRow> {
    const fields = definedFields(dto);
    if (Object.keys(fields).length === 0) return this.get(accountId, id);
    // Another account's webhook is a 404 before anything is said about the URL.
    if (fields.url !== undefined) fields.url = await this.get(accountId, id).then(() => this.targets.checkUrl(fields.url!));
    if (fields.events !== undefined) fields.events = canonicalEvents(fields.events);
    return (await this.webhooks.update(accountId, id, fields)) ?? Promise.reject(notFound(id));
  }

  async remove(accountId: number, id: number): Promise<void> {
    if (!(await this.webhooks.delete(accountId, id))) throw notFound(id);
  }

  /** A new secret, returned this once; the previous one keeps signing (beside it) for 24 hours. */
  async rotateSecret(accountId: number, id: number): Promise<string> {
    const secret = generateWebhookSecret();
    if (!(await this.webhooks.rotateSecret(accountId, id, secret, SECRET_OVERLAP_HOURS))) throw notFound(id);
    return secret;
  }

  /** Sends a `ping` event to the webhook now (enabled or not): the delivery, pending. */
  async test(accountId: number, id: number): Promise<DeliveryRow> {
    return this.database.transaction(async (sql) => {
      const delivery = await this.webhooks.recordPing(accountId, id, newEvent(PING_EVENT, { webhookId: id }, null), sql);
      if (!delivery) throw notFound(id);
      await this.deliveries.enqueue(sql, accountId, [delivery]);
      return delivery;
    });
  }

  async listDeliveries(accountId: number, webhookId: number, limit: number): Promise<DeliveryRow[]> {
    return (await this.webhooks.listDeliveries(accountId, webhookId, limit)) ?? Promise.reject(notFound(webhookId));
  }

  /** Queues another attempt now; 404 for another webhook's delivery, 409 when the call's payload was erased. */
  async retryDelivery(accountId: number, webhookId: number, deliveryId: string): Promise<DeliveryRow> {
    return this.database.transaction(async (sql) => {
      const delivery = await this.webhooks.retryDelivery(accountId, webhookId, deliveryId, sql);
      if (delivery === 'not-found') throw deliveryNotFound(deliveryId);
      if (delivery === 'erased')
        throw new ConflictException(`Delivery ${deliveryId} cannot be retried: its call was deleted and the payload erased`);
      await this.deliveries.enqueue(sql, accountId, [delivery]);
      return delivery;
    });
  }
}
