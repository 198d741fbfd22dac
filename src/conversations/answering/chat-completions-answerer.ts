import { Inject, Injectable } from '@nestjs/common';
import type OpenAI from 'openai';
import { AppConfig } from '../../config/config';
import { InjectConfig } from '../../config/config.module';
import { Answerer, AnswererFailure, ReplyRequest } from './answerer';
import { CHAT_CLIENT, toFailure } from './chat-client';
import { chatMessages } from './prompt';

interface ChunkReading {
  text: string;
  finished: boolean;
}

/**
 * One streamed chunk (`chat.completion.chunk`), checked: anything but an object whose `choices` is an array
 * (or null, as vLLM's usage-only chunk) of choices whose `delta.content` is text is garbage.
 */
function readChunk(chunk: unknown): ChunkReading {
  if (chunk === null || typeof chunk !== 'object') throw new AnswererFailure('invalid-response');
  const choices = (chunk as { choices?: unknown }).choices;
  if (choices === null || choices === undefined) return { text: '', finished: false };
  if (!Array.isArray(choices)) throw new AnswererFailure('invalid-response');
  const choice: unknown = choices[0];
  if (choice === undefined) return { text: '', finished: false };
  if (choice === null || typeof choice !== 'object') throw new AnswererFailure('invalid-response');
  const { delta, finish_reason: finishReason } = choice as { delta?: unknown; finish_reason?: unknown };
  const content = delta !== null && typeof delta === 'object' ? (delta as { content?: unknown }).content : undefined;
  if (content !== undefined && content !== null && typeof content !== 'string') throw new AnswererFailure('invalid-response');
  return { text: content ?? '', finished: typeof finishReason === 'string' && finishReason !== '' };
}

/**
 * Replies through an OpenAI-compatible Chat Completions API (LLM_BASE_URL), streamed: the agent's model, the
 * system message (prompt, language, passages) and the turns, at most LLM_MAX_TOKENS, within LLM_TIMEOUT_MS.
 * A reply counts only once the provider says it finished (`finish_reason`): a stream cut short is a failure.
 */
@Injectable()
export class ChatCompletionsAnswerer extends Answerer {
  constructor(
    @Inject(CHAT_CLIENT) private readonly client: OpenAI,
    @InjectConfig() private readonly config: AppConfig,
  ) {
    super();
  }

  async *reply(request: ReplyRequest, interrupted?: AbortSignal): AsyncIterable<string> {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.config.llm.timeoutMs);
    let finished = false;
    try {
      const stream = await this.client.chat.completions.create(
        { model: request.agent.model, messages: chatMessages(request), max_tokens: this.config.llm.maxTokens, stream: true },
        { signal: interrupted ? AbortSignal.any([deadline.signal, interrupted]) : deadline.signal },
      );
      for await (const chunk of stream) {
        const { text, finished: last } = readChunk(chunk);
        if (text) yield text;
        finished ||= last;
      }
    } catch (error) {
      if (interrupted?.aborted) return;
      throw deadline.signal.aborted ? new AnswererFailure('timeout') : toFailure(error);
    } finally {
      clearTimeout(timer);
    }
    // The client ends a stream quietly when it is aborted: the visitor interrupted, or the deadline passed.
    if (interrupted?.aborted) return;
    if (deadline.signal.aborted) throw new AnswererFailure('timeout');
    if (!finished) throw new AnswererFailure('incomplete');
  }
}
