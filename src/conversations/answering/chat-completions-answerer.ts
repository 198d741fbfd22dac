import { Inject, Injectable } from '@nestjs/common';
import type OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { AppConfig } from '../../config/config';
import { InjectConfig } from '../../config/config.module';
import { Answerer, AnswererFailure, MAX_TOOL_ROUNDS, ReplyRequest } from './answerer';
import { CHAT_CLIENT, toFailure } from './chat-client';
import { chatMessages } from './prompt';
import { AssembledCall, ToolCallDeltas } from './tool-call-deltas';

interface ChunkReading {
  text: string;
  toolCalls: unknown;
  finished: boolean;
}

/**
 * One streamed chunk (`chat.completion.chunk`), checked: anything but an object whose `choices` is an array
 * (or null, as vLLM's usage-only chunk) of choices whose `delta.content` is text is garbage. Its `tool_calls`
 * are ToolCallDeltas' to read.
 */
function readChunk(chunk: unknown): ChunkReading {
  if (chunk === null || typeof chunk !== 'object') throw new AnswererFailure('invalid-response');
  const choices = (chunk as { choices?: unknown }).choices;
  if (choices === null || choices === undefined) return { text: '', toolCalls: undefined, finished: false };
  if (!Array.isArray(choices)) throw new AnswererFailure('invalid-response');
  const choice: unknown = choices[0];
  if (choice === undefined) return { text: '', toolCalls: undefined, finished: false };
  if (choice === null || typeof choice !== 'object') throw new AnswererFailure('invalid-response');
  const { delta, finish_reason: finishReason } = choice as { delta?: unknown; finish_reason?: unknown };
  const { content, tool_calls: toolCalls } = (delta !== null && typeof delta === 'object' ? delta : {}) as {
    content?: unknown;
    tool_calls?: unknown;
  };
  if (content !== undefined && content !== null && typeof content !== 'string') throw new AnswererFailure('invalid-response');
  return { text: content ?? '', toolCalls, finished: typeof finishReason === 'string' && finishReason !== '' };
}

/** One answer of the model: its text (already yielded), and the calls it asked for. */
interface Answer {
  text: string;
  calls: AssembledCall[];
}

/** Resolves with `work`'s value, or with undefined as soon as `signal` aborts (`work` goes on: it is not cancelled). */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (!signal) return work;
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Replies through an OpenAI-compatible Chat Completions API (LLM_BASE_URL), streamed: the agent's model, the
 * system message (prompt, language, passages) and the turns, at most LLM_MAX_TOKENS, each request within
 * LLM_TIMEOUT_MS. An answer counts only once the provider says it finished (`finish_reason`): a stream cut short is
 * a failure.
 *
 * With the agent's tools (`request.tools`): they are offered as `tools` (type `function`); an answer that calls some
 * has them run (several at once), their results added as `tool` messages after the answer, and the model asked
 * again, for at most MAX_TOOL_ROUNDS rounds (a model still calling then is a failure: the apology). The text of every
 * answer is the reply, streamed as it comes. An interruption stops the reply at once, between or during requests,
 * but never cancels a tool request already sent (TurnTools waits for it, for the transcript).
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
    const messages: ChatCompletionMessageParam[] = chatMessages(request);
    const tools = request.tools?.functions.length ? request.tools : undefined;
    const offered = tools?.functions.map((fn): ChatCompletionTool => ({
      type: 'function',
      function: { ...fn, parameters: fn.parameters as Record<string, unknown> },
    }));
    let said = '';
    for (let round = 0; ; round++) {
      const answer: Answer | undefined = yield* this.answer(request.agent.model, messages, offered, said, interrupted);
      if (!answer) return;
      said += answer.text;
      if (!tools || answer.calls.length === 0) return;
      if (round === MAX_TOOL_ROUNDS) throw new AnswererFailure('too-many-tool-rounds');
      const results = await unlessAborted(tools.run(answer.calls), interrupted);
      if (!results) return;
      messages.push(assistantMessage(answer), ...answer.calls.map((call, index) => toolMessage(call, results[index])));
    }
  }

  /**
   * One request, streamed: yields the answer's text as it comes (after a space when the reply so far, `said`, ends
   * without one), and returns the answer, or undefined when the reply was interrupted.
   */
  private async *answer(
    model: string,
    messages: ChatCompletionMessageParam[],
    tools: ChatCompletionTool[] | undefined,
    said: string,
    interrupted: AbortSignal | undefined,
  ): AsyncGenerator<string, Answer | undefined> {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.config.llm.timeoutMs);
    const calls = new ToolCallDeltas();
    let text = '';
    let finished = false;
    try {
      const stream = await this.client.chat.completions.create(
        { model, messages, max_tokens: this.config.llm.maxTokens, stream: true, ...(tools ? { tools } : {}) },
        { signal: interrupted ? AbortSignal.any([deadline.signal, interrupted]) : deadline.signal },
      );
      for await (const chunk of stream) {
        const reading = readChunk(chunk);
        calls.add(reading.toolCalls);
        if (reading.text) {
          // The answers of several rounds make one reply: a word of the next does not stick to the last one's.
          yield text === '' && said !== '' && !/\s$/.test(said) && !/^\s/.test(reading.text) ? ` ${reading.text}` : reading.text;
          text += reading.text;
        }
        finished ||= reading.finished;
      }
    } catch (error) {
      if (interrupted?.aborted) return undefined;
      throw deadline.signal.aborted ? new AnswererFailure('timeout') : toFailure(error);
    } finally {
      clearTimeout(timer);
    }
    // The client ends a stream quietly when it is aborted: the visitor interrupted, or the deadline passed.
    if (interrupted?.aborted) return undefined;
    if (deadline.signal.aborted) throw new AnswererFailure('timeout');
    if (!finished) throw new AnswererFailure('incomplete');
    return { text, calls: calls.calls() };
  }
}

/** The model's answer as the next request repeats it: its text (if any) and its calls. */
function assistantMessage({ text, calls }: Answer): ChatCompletionMessageParam {
  return {
    role: 'assistant',
    content: text === '' ? null : text,
    tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
  };
}

function toolMessage(call: AssembledCall, result: string | undefined): ChatCompletionMessageParam {
  return { role: 'tool', tool_call_id: call.id, content: result ?? '{"error":"The tool gave no result"}' };
}
