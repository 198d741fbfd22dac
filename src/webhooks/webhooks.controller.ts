import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam, UuidPipe } from '../common/id.pipes';
import { ApiNoBody, refuseBodyFields } from '../common/no-body';
import { CreateWebhookDto } from './dto/create-webhook.dto';
import { ListDeliveriesQuery } from './dto/list-deliveries-query.dto';
import { UpdateWebhookDto } from './dto/update-webhook.dto';
import {
  CreatedWebhookResponse,
  toCreatedWebhookResponse,
  toWebhookDeliveryResponse,
  toWebhookResponse,
  WebhookDeliveryResponse,
  WebhookResponse,
  WebhookSecretResponse,
} from './dto/webhook-response.dto';
import { WebhooksService } from './webhooks.service';

const WebhookId = () => IntIdParam('webhookId', 'Webhook');
// eslint-disable-next-line no-useless-assignment -- read by the parameter decorator below, which the rule does not see (eslint/eslint#20947)
const DeliveryId = () => Param('deliveryId', new UuidPipe('Delivery'));

const DELIVERY_DESCRIPTION =
  'Deliveries are POSTed as JSON, signed as the Standard Webhooks specification says (`webhook-id`, `webhook-timestamp`, ' +
  '`webhook-signature`); the event schemas are `CallCreatedEvent`, `CallRecordingReadyEvent`, `CallDeletedEvent` and `PingEvent` ' +
  '(see `x-webhooks`). A 2xx answer is a success; anything else, a timeout or a refused connection is retried on the schedule of ' +
  '`WEBHOOK_RETRY_SECONDS`; a 410 disables the webhook.';

@ApiTags('webhooks')
@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Get()
  @ApiOperation({ summary: "List the account's webhooks, by id (never their secrets)" })
  @ApiOkResponse({ type: WebhookResponse, isArray: true })
  async list(@CurrentAccount() account: CallerAccount): Promise<WebhookResponse[]> {
    return (await this.webhooks.list(account.id)).map(toWebhookResponse);
  }

  @Post()
  @ApiOperation({ summary: 'Create a webhook; the answer carries its signing secret, shown this once', description: DELIVERY_DESCRIPTION })
  @ApiCreatedResponse({ type: CreatedWebhookResponse })
  @ApiErrors(
    [
      400,
      'Invalid field (a URL that is not https, has credentials or points at a private address; an unknown or empty list of events), or the account already has 20 webhooks',
    ],
    413,
    415,
  )
  async create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateWebhookDto): Promise<CreatedWebhookResponse> {
    return toCreatedWebhookResponse(await this.webhooks.create(account.id, dto));
  }

  @Get(':webhookId')
  @ApiOperation({ summary: 'Get one webhook' })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiErrors(404)
  async get(@CurrentAccount() account: CallerAccount, @WebhookId() webhookId: number): Promise<WebhookResponse> {
    return toWebhookResponse(await this.webhooks.get(account.id, webhookId));
  }

  @Patch(':webhookId')
  @ApiOperation({ summary: "Change some of a webhook's fields; disabling it cancels its pending deliveries" })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiErrors(400, 404, 413, 415)
  async update(
    @CurrentAccount() account: CallerAccount,
    @WebhookId() webhookId: number,
    @Body() dto: UpdateWebhookDto,
  ): Promise<WebhookResponse> {
    return toWebhookResponse(await this.webhooks.update(account.id, webhookId, dto));
  }

  @Delete(':webhookId')
  @NoContent()
  @ApiOperation({ summary: 'Delete a webhook and its deliveries log' })
  @ApiErrors(404)
  async remove(@CurrentAccount() account: CallerAccount, @WebhookId() webhookId: number): Promise<void> {
    await this.webhooks.remove(account.id, webhookId);
  }

  @Post(':webhookId/rotate-secret')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Replace the signing secret; for 24 hours deliveries carry signatures made with the new and the previous secret',
  })
  @ApiOkResponse({ type: WebhookSecretResponse })
  @ApiErrors(404)
  @ApiNoBody()
  async rotateSecret(
    @CurrentAccount() account: CallerAccount,
    @WebhookId() webhookId: number,
    @Body() body: unknown,
  ): Promise<WebhookSecretResponse> {
    refuseBodyFields(body);
    return { secret: await this.webhooks.rotateSecret(account.id, webhookId) };
  }

  @Post(':webhookId/test')
  @HttpCode(202)
  @ApiOperation({ summary: 'Send a `ping` event to the webhook now (enabled or not); the answer is its delivery, pending' })
  @ApiAcceptedResponse({ type: WebhookDeliveryResponse })
  @ApiErrors(404)
  @ApiNoBody()
  async test(
    @CurrentAccount() account: CallerAccount,
    @WebhookId() webhookId: number,
    @Body() body: unknown,
  ): Promise<WebhookDeliveryResponse> {
    refuseBodyFields(body);
    return toWebhookDeliveryResponse(await this.webhooks.test(account.id, webhookId));
  }

  @Get(':webhookId/deliveries')
  @ApiOperation({
    summary: "The webhook's deliveries, newest first: status, attempts, last answer or error, next attempt",
    description:
      'Deliveries are kept for `WEBHOOK_RETENTION_DAYS` (30 by default) after their event, and then for as long as they are pending.',
  })
  @ApiOkResponse({ type: WebhookDeliveryResponse, isArray: true })
  @ApiErrors([400, 'Bad query parameter value (with `details`)'], 404)
  async listDeliveries(
    @CurrentAccount() account: CallerAccount,
    @WebhookId() webhookId: number,
    @Query() query: ListDeliveriesQuery,
  ): Promise<WebhookDeliveryResponse[]> {
    return (await this.webhooks.listDeliveries(account.id, webhookId, query.limit)).map(toWebhookDeliveryResponse);
  }

  @Post(':webhookId/deliveries/:deliveryId/retry')
  @HttpCode(202)
  @ApiOperation({
    summary:
      'Attempt a delivery again now (a failed one, a pending one brought forward, or a succeeded one replayed, with the same `webhook-id`)',
    description:
      'While an attempt of the delivery is in flight, the retry is made as soon as that attempt ends, whatever its outcome, ' +
      'instead of after the next delay of `WEBHOOK_RETRY_SECONDS` (unless the receiver answered 410, which disables the webhook).',
  })
  @ApiParam({ name: 'deliveryId', format: 'uuid', description: 'Anything that is not a UUID is a 404, like an unknown id' })
  @ApiAcceptedResponse({ type: WebhookDeliveryResponse })
  @ApiErrors(404, [409, "The delivery's call was deleted and its payload erased"])
  @ApiNoBody()
  async retryDelivery(
    @CurrentAccount() account: CallerAccount,
    @WebhookId() webhookId: number,
    @DeliveryId() deliveryId: string,
    @Body() body: unknown,
  ): Promise<WebhookDeliveryResponse> {
    refuseBodyFields(body);
    return toWebhookDeliveryResponse(await this.webhooks.retryDelivery(account.id, webhookId, deliveryId));
  }
}
