import { ApiProperty } from '@nestjs/swagger';
import { IsDefined, IsInt, IsString, Max, Min } from 'class-validator';
import { CallerName } from '../../calls/dto/create-call.dto';
import { MAX_INT_ID } from '../../common/id.pipes';
import { IsOmittable, MaxCodePointLength, Trim } from '../../common/validators';
import { E164Number } from './phone-number-settings.dto';

/** A call the agent places from the number. */
export class PlaceCallDto {
  /** Who is called, in E.164. */
  @IsDefined({ message: 'to is required' })
  @E164Number('to', '+919876543210', true)
  to: string;

  /** The agent that speaks (one of this account's, 400 otherwise); defaults to the number's agent (409 when it has none). */
  @IsOmittable()
  @ApiProperty({ type: 'integer', required: false, minimum: 1, maximum: MAX_INT_ID, example: 12 })
  @IsInt()
  @Min(1)
  @Max(MAX_INT_ID)
  agentId?: number;

  /** The callee's name, at most 200 characters: the call's `name`. @example "Priya Sharma" */
  @CallerName()
  name?: string = '';

  /**
   * The agent's first sentence once the callee answers, at most 500 characters after trimming; "" (the default)
   * for none: the agent waits for the callee. @example "Hello, this is Acme calling about your order."
   */
  @IsOmittable()
  @Trim()
  @IsString()
  @MaxCodePointLength(500)
  greeting?: string = '';
}
