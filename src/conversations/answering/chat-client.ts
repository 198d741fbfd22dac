import type OpenAI from 'openai';
import { LlmConfig } from '../../config/config';
import { AnswererFailure } from './answerer';

/** The injection token of the client; null when no provider is configured. */
export const CHAT_CLIENT = Symbol('CHAT_CLIENT');

const silent = () => undefined;
const SILENT_LOGGER = { error: silent, warn: silent, info: silent, debug: silent };

/**
 * The SDK, loaded only when a provider is configured (as the S3 driver is): the built-in answerer does not need
 * its memory.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use only, for the memory above
const sdk = (): typeof OpenAI => (require('openai') as { default: typeof OpenAI }).default;

/**
 * The official `openai` client on any OpenAI-compatible Chat Completions API (OpenAI, Azure OpenAI, Groq, vLLM,
 * Ollama, llama.cpp's server): only `baseURL` differs. Requests carry only standard fields. `fetch` is
 * ProviderHttp's (see there why not Node's own).
 */
export function createChatClient(llm: LlmConfig, fetch: typeof globalThis.fetch): OpenAI {
  const OpenAIClient = sdk();
  return new OpenAIClient({
    baseURL: llm.baseUrl,
    // Local servers need no key, but the client insists on one (sent as `Bearer none`, which they ignore).
    apiKey: llm.apiKey ?? 'none',
    organization: null,
    project: null,
    // No retry: it would outlast LLM_TIMEOUT_MS; the visitor gets the apology at once instead.
    maxRetries: 0,
    timeout: llm.timeoutMs,
    // The client would log an unparsable chunk, the provider's own text: nothing of it may reach the logs.
    logLevel: 'off',
    logger: SILENT_LOGGER,
    fetch,
  });
}

/**
 * Runs `work` with an AbortSignal that fires after `timeoutMs`: the bound on one whole reply (first byte to
 * last), which the client's own timeout (until the response headers) does not give.
 */
export async function withDeadline<T>(timeoutMs: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  try {
    const result = await work(deadline.signal);
    if (deadline.signal.aborted) throw new AnswererFailure('timeout');
    return result;
  } catch (error) {
    throw deadline.signal.aborted ? new AnswererFailure('timeout') : toFailure(error);
  } finally {
    clearTimeout(timer);
  }
}

/** What went wrong, reduced to a kind (and an HTTP status): the error's text may be the provider's and is dropped. */
export function toFailure(error: unknown): AnswererFailure {
  if (error instanceof AnswererFailure) return error;
  const OpenAI = sdk(); // loaded already: only a configured provider's errors get here
  if (error instanceof OpenAI.APIConnectionTimeoutError) return new AnswererFailure('timeout');
  if (error instanceof OpenAI.APIConnectionError || error instanceof OpenAI.APIUserAbortError) return new AnswererFailure('connection');
  if (error instanceof OpenAI.APIError) {
    // No status: an error object inside a 200 stream.
    const status: unknown = error.status;
    return typeof status === 'number' && status > 0 ? new AnswererFailure('http-status', status) : new AnswererFailure('invalid-response');
  }
  if (error instanceof SyntaxError) return new AnswererFailure('invalid-response'); // a chunk that is not JSON
  return new AnswererFailure('connection'); // the body cut mid-stream (fetch's "terminated"), a socket error
}
