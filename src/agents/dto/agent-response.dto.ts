import { ApiProperty } from '@nestjs/swagger';
import { ApiDateTime } from '../../common/api-formats';
import { AgentRow } from '../agents.repository';

export class AgentResponse {
  /** @example 42 */
  @ApiProperty({ type: 'integer' })
  id: number;
  /** @example "Reception desk" */
  name: string;
  /** @example "Answers the front desk line after hours" */
  description: string;
  /** @example "gpt-4.1" */
  model: string;
  /** @example "shubh" */
  voice: string;
  /** @example "hi-IN" */
  language: string;
  /** Blank means the built-in generic assistant prompt is used. @example "" */
  systemPrompt: string;
  /** The knowledge bases it answers from, by id ascending. @example [3, 7] */
  @ApiProperty({ type: 'integer', isArray: true })
  knowledgeBaseIds: number[];
  /** The tools the model may call, by id ascending. @example [5] */
  @ApiProperty({ type: 'integer', isArray: true })
  toolIds: number[];
  /** The latest version published (`POST /agents/{agentId}/versions`), which widget, phone and non-test API conversations run; null until the first (they run the current settings). @example 3 */
  @ApiProperty({ type: 'integer', nullable: true })
  publishedVersion: number | null;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  updatedAt: string;
}

export function toAgentResponse(agent: AgentRow): AgentResponse {
  return {
    id: agent.id,
    name: agent.name,
    description: agent.description,
    model: agent.model,
    voice: agent.voice,
    language: agent.language,
    systemPrompt: agent.systemPrompt,
    knowledgeBaseIds: agent.knowledgeBaseIds,
    toolIds: agent.toolIds,
    publishedVersion: agent.publishedVersion,
    createdAt: agent.createdAt.toISOString(),
    updatedAt: agent.updatedAt.toISOString(),
  };
}
