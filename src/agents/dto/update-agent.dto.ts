import { ApiProperty } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsInt, IsString, Max, Min } from 'class-validator';
import { MAX_INT_ID } from '../../common/id.pipes';
import { CodePointLength, IsOmittable, IsOneOf, MaxCodePointLength, Trim } from '../../common/validators';
import { MAX_TOOLS_PER_AGENT } from '../../tools/tool-rules';
import { REPLY_LANGUAGES, VOICE_IDS } from '../voices';

export const MAX_KNOWLEDGE_BASES = 50;

/** Any subset of the agent's fields; absent fields are left as they are. The rules apply on create too. */
export class UpdateAgentDto {
  /** 1–200 characters after trimming. @example "Reception desk (night)" */
  @IsOmittable()
  @Trim()
  @IsString()
  @CodePointLength(1, 200)
  name?: string;

  /** At most 2,000 characters. */
  @IsOmittable()
  @IsString()
  @MaxCodePointLength(2000)
  description?: string;

  /** 1–100 characters. @example "gpt-4.1-mini" */
  @IsOmittable()
  @IsString()
  @CodePointLength(1, 100)
  model?: string;

  /** A voice id from `GET /voices`; the platform-only tiers give 403 to other accounts. @example "anushka" */
  @ApiProperty({ enum: VOICE_IDS, required: false })
  @IsOmittable()
  @IsOneOf(VOICE_IDS)
  voice?: string;

  /** @example "en-IN" */
  @ApiProperty({ enum: REPLY_LANGUAGES, required: false })
  @IsOmittable()
  @IsOneOf(REPLY_LANGUAGES)
  language?: string;

  /** At most 50,000 characters. */
  @IsOmittable()
  @IsString()
  @MaxCodePointLength(50_000)
  systemPrompt?: string;

  /**
   * The knowledge bases the agent answers from: ids of knowledge bases of this account (400 otherwise), at most
   * 50; duplicates count once. Replaces the agent's list. Returned ascending; a deleted knowledge base leaves
   * every agent's list. @example [3, 7]
   */
  @ApiProperty({ type: 'integer', isArray: true, required: false, maxItems: MAX_KNOWLEDGE_BASES, minimum: 1, maximum: MAX_INT_ID })
  @IsOmittable()
  @IsArray()
  @ArrayMaxSize(MAX_KNOWLEDGE_BASES)
  @IsInt({ each: true })
  @Min(1, { each: true })
  @Max(MAX_INT_ID, { each: true })
  knowledgeBaseIds?: number[];

  /**
   * The tools the model may call in its conversations (`GET /tools`): ids of tools of this account (400 otherwise),
   * at most 20; duplicates count once. Replaces the agent's list. Returned ascending; a deleted tool leaves every
   * agent's list. @example [5]
   */
  @ApiProperty({ type: 'integer', isArray: true, required: false, maxItems: MAX_TOOLS_PER_AGENT, minimum: 1, maximum: MAX_INT_ID })
  @IsOmittable()
  @IsArray()
  @ArrayMaxSize(MAX_TOOLS_PER_AGENT)
  @IsInt({ each: true })
  @Min(1, { each: true })
  @Max(MAX_INT_ID, { each: true })
  toolIds?: number[];
}
