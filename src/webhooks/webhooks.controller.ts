import { Body, Controller, Delete, Get, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam, UuidPipe } from '../common/id.pipes';
import { ApiNoBody, refuseBodyFields } from '../common/no-body';
import { Responds } from '../common/responds';
import { CreateWebhookDto } from './dto/create-webhook.dto';
import { ListDeliveriesQuery } from './dto/list-deliveries-query.dto';
import { UpdateWebhookDto } from './dto/update-webhook.dto';
import {
  CreatedWebhook,
  CreatedWebhookResponse,
  toCreatedWebhookResponse,
  toWebhookDeliveryResponse,
  toWebhookResponse,
  toWebhookSecretResponse,
  WebhookDeliveryResponse,
  WebhookResponse,
  WebhookSecretResponse,
} from './dto/webhook-response.dto';
import { DeliveryRow, WebhookRow } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

const WebhookId = () => IntIdParam('webhookId', 'Webhook');
// eslint-disable-next-line no-useless-assignment -- read by the parameter decorator below, which the rule does not see (eslint/eslint#20947)
const DeliveryId = () => Param('deliveryId', new UuidPipe('Delivery'));

const DELIVERY_DESCRIPTION =
  'Deliveries are POSTed as JSON, signed as the Standard Webhooks specification says (`webhook-id`, `webhook-timestamp`, ' +
  '`webhook-signature`); the event schemas are `CallCreatedEvent`, `CallRecordingReadyEvent`, `CallDeletedEvent` and `PingEvent` ' +
  '(under `webhooks` in this document). A 2xx answer is a success; anything else, a timeout or a refused connection is retried on the schedule of ' +
  '`WEBHOOK_RETRY_SECONDS`; a 410 disables the webhook.';

@ApiTags('webhooks')
@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Get()
  @ApiOperation({ summary: "List the account's webhooks, by id (never their secrets)" })
  @Responds([WebhookResponse], toWebhookResponse)
  list(@CurrentAccount() account: CallerAccount): Promise<WebhookRow[]> {
    return this.webhooks.list(account.id);
  }

  @Post()
  @ApiOperation({ summary: 'Create a webhook; the answer carries its signing secret, shown this once', description: DELIVERY_DESCRIPTION })
  @Responds(CreatedWebhookResponse, toCreatedWebhookResponse, { status: 201 })
  @ApiErrors(
    [
      400,
      'Invalid field (a URL that is not https, has credentials or points at a private address; an unknown or empty list of events), or the account already has 20 webhooks',
    ],
    413,
    415,
  )
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateWebhookDto): Promise<CreatedWebhook> {
    return this.webhooks.create(account.id, dto);
  }

  @Get(':webhookId')
  @ApiOperation({ summary: 'Get one webhook' })
  @Responds(WebhookResponse, toWebhookResponse)
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @WebhookId() webhookId: number): Promise<WebhookRow> {
    return this.webhooks.get(account.id, webhookId);
  }

  @Patch(':webhookId')
  @ApiOperation({ summary: "Change some of a webhook's fields; disabling it cancels its pending deliveries" })
  @Responds(WebhookResponse, toWebhookResponse)
  @ApiErrors(400, 404, 413, 415)
  update(@CurrentAccount() account: CallerAccount, @WebhookId() webhookId: number, @Body() dto: UpdateWebhookDto): Promise<WebhookRow> {
    return this.webhooks.update(account.id, webhookId, dto);
  }

  @Delete(':webhookId')
  @NoContent()
  @ApiOperation({ summary: 'Delete a webhook and its deliveries log' })
  @ApiErrors(404)
  async remove(@CurrentAccount() account: CallerAccount, @WebhookId() webhookId: number): Promise<void> {
    await this.webhooks.remove(account.id, webhookId);
  }

  @Post(':webhookId/rotate-secret')
  @ApiOperation({
    summary: 'Replace the signing secret; for 24 hours deliveries carry signatures made with the new and the previous secret',
  })
  @Responds(WebhookSecretResponse, toWebhookSecretResponse)
  @ApiErrors(404)
  @ApiNoBody()
  async rotateSecret(@CurrentAccount() account: CallerAccount, @WebhookId() webhookId: number, @Body() body: unknown): Promise<string> {
    refuseBodyFields(body);
    return this.webhooks.rotateSecret(account.id, webhookId);
  }

  @Post(':webhookId/test')
  @ApiOperation({ summary: 'Send a `ping` event to the webhook now (enabled or not); the answer is its delivery, pending' })
  @Responds(WebhookDeliveryResponse, toWebhookDeliveryResponse, { status: 202 })
  @ApiErrors(404)
  @ApiNoBody()
  async test(@CurrentAccount() account: CallerAccount, @WebhookId() webhookId: number, @Body() body: unknown): Promise<DeliveryRow> {
    refuseBodyFields(body);
    return this.webhooks.test(account.id, webhookId);
  }

  @Get(':webhookId/deliveries')
  @ApiOperation({
    summary: "The webhook's deliveries, newest first: status, attempts, last answer or error, next attempt",
    description:
      'Deliveries are kept for `WEBHOOK_RETENTION_DAYS` (30 by default) after their event, and then for as long as they are pending.',
  })
  @Responds([WebhookDeliveryResponse], toWebhookDeliveryResponse)
  @ApiErrors([400, 'Bad query parameter value (with `details`)'], 404)
  listDeliveries(
    @CurrentAccount() account: CallerAccount,
    @WebhookId() webhookId: number,
    @Query() query: ListDeliveriesQuery,
  ): Promise<DeliveryRow[]> {
    return this.webhooks.listDeliveries(account.id, webhookId, query.limit);
  }

  @Post(':webhookId/deliveries/:deliveryId/retry')
  @ApiOperation({
    summary:
      'Attempt a delivery again now (a failed one, a pending one brought forward, or a succeeded one replayed, with the same `webhook-id`)',
    description:
      'While an attempt of the delivery is in flight, the retry is made as soon as that attempt ends, whatever its outcome, ' +
      'instead of after the next delay of `WEBHOOK_RETRY_SECONDS` (unless the receiver answered 410, which disables the webhook).',
  })
  @ApiParam({ name: 'deliveryId', format: 'uuid', description: 'Anything that is not a UUID is a 404, like an unknown id' })
  @Responds(WebhookDeliveryResponse, toWebhookDeliveryResponse, { status: 202 })
  @ApiErrors(404, [409, "The delivery's call was deleted and its payload erased"])
  @ApiNoBody()
  async retryDelivery(
    @CurrentAccount() account: CallerAccount,
    @WebhookId() webhookId: number,
    @DeliveryId() deliveryId: string,
    @Body() body: unknown,
  ): Promise<DeliveryRow> {
    refuseBodyFields(body);
    return this.webhooks.retryDelivery(account.id, webhookId, deliveryId);
  }
}
