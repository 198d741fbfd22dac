import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayNotEmpty, IsArray, IsBoolean, IsIn, IsString } from 'class-validator';
import { IsOmittable, MaxCodePointLength } from '../../common/validators';
import { WEBHOOK_EVENT_TYPES, WebhookEventType } from '../webhook-event-types';
import { MAX_WEBHOOK_URL_LENGTH } from '../webhook-targets';

/** The rules of `url` (the address policy is checked by the service, which may resolve the name). */
export const WebhookUrlRules = (required: boolean) =>
  applyDecorators(ApiProperty({ format: 'uri', required }), IsString(), MaxCodePointLength(MAX_WEBHOOK_URL_LENGTH));

/** The rules of `events`: a non-empty list of known event types (duplicates are ignored). */
export const WebhookEventsRules = () =>
  applyDecorators(
    ApiProperty({ enum: WEBHOOK_EVENT_TYPES, isArray: true, minItems: 1, example: ['call.created', 'call.deleted'] }),
    IsArray(),
    ArrayNotEmpty({ message: 'events must name at least one event' }),
    ArrayMaxSize(50),
    IsIn([...WEBHOOK_EVENT_TYPES], { each: true, message: `each of events must be one of: ${WEBHOOK_EVENT_TYPES.join(', ')}` }),
  );

/** The fields with the same rule on create and update. */
export class WebhookSettingsDto {
  /** At most 2,000 characters. @example "CRM sync" */
  @IsOmittable()
  @IsString()
  @MaxCodePointLength(2000)
  description?: string;

  /** A disabled webhook gets no new events, and disabling one cancels its pending deliveries. @example true */
  @IsOmittable()
  @IsBoolean()
  enabled?: boolean;
}

/** Any subset of the webhook's fields; absent fields are left as they are. */
export class UpdateWebhookDto extends WebhookSettingsDto {
  /**
   * Where events are POSTed: an https URL of a public address, at most 2,000 characters, without credentials
   * (http and private addresses only when the service runs with WEBHOOK_ALLOW_PRIVATE_TARGETS=true).
   * @example "https://crm.example.com/hooks/voice"
   */
  @IsOmittable()
  @WebhookUrlRules(false)
  url?: string;

  @IsOmittable()
  @WebhookEventsRules()
  events?: WebhookEventType[];
}
