import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { ApiUuid } from '../../common/api-formats';
import { CONVERSATION_CHANNELS } from '../../conversations/conversation.entity';

export class ToolCallConversation {
  /** The conversation's id, also its call's. @example "5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90" */
  @ApiUuid()
  id: string;
  /** @example 42 */
  @ApiProperty({ type: 'integer' })
  agentId: number;
  @ApiProperty({ enum: CONVERSATION_CHANNELS, example: 'web-widget' })
  channel: string;
  /** The visitor's phone number as given when the conversation started; "" when none was. @example "+91-98765-43210" */
  phone: string;
  /** The visitor's name as given when the conversation started; "" when none was. @example "Priya Sharma" */
  name: string;
}

@ApiSchema({
  description:
    "What a webhook tool's `url` receives when the model calls it: a `POST` of this JSON, with the Standard Webhooks headers " +
    "`webhook-id` (this `id`), `webhook-timestamp` and `webhook-signature` (made with the tool's secret, and for 24 hours after a " +
    'rotation with the previous one too).',
})
export class ToolCallRequest {
  /** The call's id, also sent as `webhook-id`. @example "tc_0b8e3c1a3f5e4a8e9d1c6f2b7a9e4c21" */
  id: string;
  /** The tool's name. @example "book_table" */
  tool: string;
  /** The model's arguments, valid against the tool's `parameters`. @example {"people": 2, "time": "19:30"} */
  @ApiProperty({ type: 'object', additionalProperties: true })
  arguments: object;
  conversation: ToolCallConversation;
}
