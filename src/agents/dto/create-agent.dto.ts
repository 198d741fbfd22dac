import { UpdateAgentDto } from './update-agent.dto';

/** Every field is optional; the rules are those of UpdateAgentDto, and absent fields take these defaults. */
export class CreateAgentDto extends UpdateAgentDto {
  /** @example "Reception desk" */
  name?: string = 'Unnamed agent';

  description?: string = '';

  model?: string = 'gpt-4.1';

  /** @example "shubh" */
  voice?: string = 'shubh';

  /** @example "hi-IN" */
  language?: string = 'hi-IN';

  systemPrompt?: string = '';

  knowledgeBaseIds?: number[] = [];

  toolIds?: number[] = [];
}
