import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { IsInt, Max, Min, ValidateIf } from 'class-validator';
import { MAX_INT_ID } from '../common/id.pipes';

/**
 * `agentVersion` of a widget site or a phone number (contract section 19): a version of its agent that its
 * conversations run instead of the published one, or null for none. Checked against the agent by
 * AgentVersionsService.pin.
 */
export const AgentVersionPin = () =>
  applyDecorators(
    ValidateIf((_object, value) => value !== undefined && value !== null),
    ApiProperty({
      type: 'integer',
      required: false,
      nullable: true,
      minimum: 1,
      maximum: MAX_INT_ID,
      example: 3,
      description:
        "A published version of `agentId` that its conversations run (`GET /agents/{agentId}/versions`), or null (the default): the agent's latest published version. Cleared when `agentId` changes without a new pin, and when the agent is deleted.",
    }),
    IsInt(),
    Min(1),
    Max(MAX_INT_ID),
  );
