import { ApiProperty } from '@nestjs/swagger';
import { ApiDateTime } from '../../common/api-formats';
import { AgentVersionRow } from '../agent-versions.repository';

/** The agent's settings as a version holds them. */
export class AgentSettingsResponse {
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
  /** @example "" */
  systemPrompt: string;
  /** As published (a knowledge base deleted since is left out when the version answers or is restored). @example [3, 7] */
  @ApiProperty({ type: 'integer', isArray: true })
  knowledgeBaseIds: number[];
  /** As published (a tool deleted since is left out when the version answers or is restored). @example [5] */
  @ApiProperty({ type: 'integer', isArray: true })
  toolIds: number[];
}

export class AgentVersionResponse {
  /** 1, 2, 3… per agent. @example 1 */
  @ApiProperty({ type: 'integer' })
  version: number;
  /** @example "Friendlier greeting" */
  description: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
  settings: AgentSettingsResponse;
}

export function toAgentVersionResponse(row: AgentVersionRow): AgentVersionResponse {
  const s = row.settings;
  return {
    version: row.version,
    description: row.description,
    createdAt: row.createdAt.toISOString(),
    settings: {
      name: s.name,
      description: s.description,
      model: s.model,
      voice: s.voice,
      language: s.language,
      systemPrompt: s.systemPrompt,
      knowledgeBaseIds: s.knowledgeBaseIds,
      toolIds: s.toolIds,
    },
  };
}
