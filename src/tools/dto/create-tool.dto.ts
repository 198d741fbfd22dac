import { ApiProperty } from '@nestjs/swagger';
import { IsDefined } from 'class-validator';
import { IsOneOf } from '../../common/validators';
import { TOOL_TYPES, ToolType } from '../tool-rules';
import { UpdateToolDto } from './update-tool.dto';

/**
 * A tool of one of three types, each taking its own fields:
 * - `webhook`: `name`, `description` and `url` required; `parameters`, `timeoutSeconds`, `speakWhileRunning`;
 * - `end_call`: `name` (default "end_call") and `description` (default: a built-in one), nothing else;
 * - `transfer_call`: `name`, `description` and `number` required, nothing else.
 */
export class CreateToolDto extends UpdateToolDto {
  /**
   * `webhook` calls the customer's URL; `end_call` lets the model end the conversation after its last sentence;
   * `transfer_call` moves a phone call to `number`. Cannot be changed afterwards. @example "webhook"
   */
  @ApiProperty({ enum: TOOL_TYPES })
  @IsDefined({ message: 'type is required' })
  @IsOneOf(TOOL_TYPES)
  type: ToolType;
}
