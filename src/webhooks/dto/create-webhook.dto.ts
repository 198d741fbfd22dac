import { IsDefined } from 'class-validator';
import { WebhookEventType } from '../webhook-event-types';
import { WebhookEventsRules, WebhookSettingsDto, WebhookUrlRules } from './update-webhook.dto';

/** `url` and `events` are required; absent optional fields take these defaults. */
export class CreateWebhookDto extends WebhookSettingsDto {
  /**
   * Where events are POSTed: an https URL of a public address, at most 2,000 characters as stored (normalised, with
   * non-ASCII characters percent-encoded: `é` counts 6), without credentials
   * (http and private addresses only when the service runs with WEBHOOK_ALLOW_PRIVATE_TARGETS=true).
   * @example "https://crm.example.com/hooks/voice"
   */
  @IsDefined({ message: 'url is required' })
  @WebhookUrlRules(true)
  url: string;

  @IsDefined({ message: 'events is required' })
  @WebhookEventsRules()
  events: WebhookEventType[];

  description?: string = '';

  enabled?: boolean = true;
}
