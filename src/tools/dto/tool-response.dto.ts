import { ApiProperty } from '@nestjs/swagger';
import { ApiDateTime } from '../../common/api-formats';
import { TOOL_TYPES, ToolType } from '../tool-rules';
import { ToolRow } from '../tools.repository';

export class ToolResponse {
  /** @example 5 */
  @ApiProperty({ type: 'integer' })
  id: number;
  @ApiProperty({ enum: TOOL_TYPES, example: 'webhook' })
  type: ToolType;
  /** @example "book_table" */
  name: string;
  /** "" for an end_call tool created without one (the model is given a built-in description). @example "Books a table at the restaurant." */
  description: string;
  /** webhook: the JSON Schema of the arguments, as written; null for the other types. */
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, example: { type: 'object', properties: {} } })
  parameters: object | null;
  /** webhook: where its requests go; null for the other types. @example "https://bookings.example.com/tools/book-table" */
  @ApiProperty({ type: String, nullable: true })
  url: string | null;
  /** webhook: 1–60; null for the other types. @example 10 */
  @ApiProperty({ type: 'integer', nullable: true })
  timeoutSeconds: number | null;
  /** webhook: said while it runs in a spoken conversation; null for the other types. @example "One moment." */
  @ApiProperty({ type: String, nullable: true })
  speakWhileRunning: string | null;
  /** transfer_call: where a phone call is transferred; null for the other types. @example null */
  @ApiProperty({ type: String, nullable: true })
  number: string | null;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  updatedAt: string;
}

/** The tool as created, with its signing secret: shown this once only. */
export class CreatedToolResponse extends ToolResponse {
  /**
   * A webhook tool's signing secret (`whsec_` + base64 of 32 random bytes): verify its requests with it (Standard
   * Webhooks). Shown only here and by rotate-secret; null for the other types, which send no requests.
   * @example "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD6MnAWTVRhDE="
   */
  @ApiProperty({ type: String, nullable: true })
  secret: string | null;
}

export class ToolSecretResponse {
  /**
   * The new signing secret, shown this once. For 24 hours requests carry signatures made with both the new and the
   * previous secret. @example "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD6MnAWTVRhDE="
   */
  secret: string;
}

export function toToolResponse(tool: ToolRow): ToolResponse {
  return {
    id: tool.id,
    type: tool.type,
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    url: tool.url,
    timeoutSeconds: tool.timeoutSeconds,
    speakWhileRunning: tool.speakWhileRunning,
    number: tool.number,
    createdAt: tool.createdAt.toISOString(),
    updatedAt: tool.updatedAt.toISOString(),
  };
}

/** A new tool and its signing secret (null but for a webhook tool), as ToolsService.create makes them. */
export interface CreatedTool {
  tool: ToolRow;
  secret: string | null;
}

export function toCreatedToolResponse({ tool, secret }: CreatedTool): CreatedToolResponse {
  return { ...toToolResponse(tool), secret };
}

export function toToolSecretResponse(secret: string): ToolSecretResponse {
  return { secret };
}
