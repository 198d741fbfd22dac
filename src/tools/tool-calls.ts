import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { codePointLength } from '../common/code-points';
import { OutboundErrorCode } from '../outbound/outbound-http';
import { signedHeaders } from '../webhooks/webhook-signature';
import { WebhookTargets } from '../webhooks/webhook-targets';
import { argumentsProblem, MAX_PARAMETERS_BYTES } from './parameter-schemas';
import { NO_PARAMETERS } from './tool-rules';
import { CallableTool, ToolsRepository } from './tools.repository';

/** A function the model may call: a Chat Completions `tools[]` entry's `function`. */
export interface ToolFunction {
  name: string;
  description: string;
  parameters: object;
}

/** A call the model asked for, assembled from its answer: `arguments` is the JSON text it wrote. */
export interface RequestedCall {
  id: string;
  name: string;
  arguments: string;
}

/** The conversation a turn's tools act in: what a webhook tool's request tells the customer's system about it. */
export interface ToolConversation {
  id: string;
  agentId: number;
  channel: string;
  phone: string;
  name: string;
}

/** What one call did: the result the model is given, and its transcript entry. */
interface CallOutcome {
  result: string;
  entry: string;
}

/** The most calls of one answer that are run; the model is told to make the others after these. */
export const MAX_CALLS_PER_ANSWER = 10;
/** A webhook tool's answer, at most (a larger one is an error for the model, read no further). */
export const MAX_RESULT_BYTES = 16 * 1024;
/** A transcript entry, at most (in characters, as PostgreSQL counts them). */
export const MAX_ENTRY_LENGTH = 1_000;
/** The arguments of one call, at most (the model's text; a schema's arguments are far smaller). */
export const MAX_ARGUMENTS_LENGTH = 4 * MAX_PARAMETERS_BYTES;

const END_CALL_DESCRIPTION = 'End the call once the conversation is over; your reply is the last thing the caller hears.';
const END_CALL_RESULT = JSON.stringify({ ok: true, note: 'The call ends after your reply: say goodbye now, unless you already did.' });
const NOT_A_PHONE_CALL = 'This conversation is not a phone call: it cannot be transferred';
const ALREADY_LEAVING = 'The call is already ending or being transferred';
/** What the model is told of a transfer it asked for (the number is the transcript's "where"). */
const transferResult = (number: string) =>
  JSON.stringify({ ok: true, transferTo: number, note: 'The caller is moved to this number after your reply: tell them now.' });

const errorResult = (words: string) => JSON.stringify({ error: words });

/** `text` cut to `max` characters (code points), the last one an ellipsis when it was longer. */
function cut(text: string, max: number): string {
  if (text.length <= max || codePointLength(text) <= max) return text;
  return `${[...text].slice(0, max - 1).join('')}…`;
}

/** The transcript entry of a call: `book_table {"people":2} → {"confirmed":true}`, cut at MAX_ENTRY_LENGTH. */
const entryOf = (name: string, args: string, result: string) => cut(`${name} ${args} → ${result}`, MAX_ENTRY_LENGTH);

/** Why a request's answer is no result, in words for the model (never the URL, the address or the answer's text). */
function failureWords(code: OutboundErrorCode | undefined, timeoutSeconds: number): string {
  switch (code) {
    case 'timeout':
      return `The tool did not answer within ${timeoutSeconds} s`;
    case 'too-large':
      return 'The tool answered more than 16 KiB';
    case 'connection':
      return 'The tool could not be reached';
    case 'dns':
      return "The tool's address could not be found";
    case 'forbidden-address':
    case 'invalid-url':
      return "The tool's address is not allowed";
    case 'bad-response':
      return 'The tool did not answer valid HTTP';
    default:
      return 'The tool request failed';
  }
}

/** Sends a webhook tool's request: the result for the model (the answer's body, or an error in words) and why it failed, if it did. */
type Send = (tool: CallableTool, args: object) => Promise<{ result: string; failure?: { kind: string; status?: number } }>;

/**
 * The tools of one turn: offered to the model (`functions`), run on its calls (`run`, several at once), and what
 * they did (`entries`, `hangUp`). A request once sent is never cancelled: an interrupted reply stops asking the
 * model, but `entries()` waits for every call made so far, so that the transcript holds what each did.
 */
export class TurnTools {
  readonly functions: ToolFunction[];
  private readonly byName: Map<string, CallableTool>;
  private readonly outcomes: Promise<CallOutcome>[] = [];
  private hungUp = false;
  private transferNumber: string | undefined;

  constructor(
    tools: CallableTool[],
    private readonly send: Send,
    private readonly logger: Logger,
    /** Whether the conversation is a phone call (the only kind a transfer_call tool could move). */
    private readonly onThePhone = false,
    /** Told the `speakWhileRunning` words of the webhook tools about to be requested (a spoken reply says them). */
    private readonly whileRunning: (words: string) => void = () => undefined,
  ) {
    this.byName = new Map(tools.map((tool) => [tool.name, tool]));
    this.functions = tools.map((tool) => ({
      name: tool.name,
      description: tool.description || (tool.type === 'end_call' ? END_CALL_DESCRIPTION : tool.name),
      parameters: tool.parameters ?? NO_PARAMETERS,
    }));
  }

  /** Whether the agent ended the call (end_call): the conversation ends once this reply is recorded. */
  get hangUp(): boolean {
    return this.hungUp;
  }

  /** Where the agent moves the phone call (transfer_call), once this reply has been heard; undefined when it does not. */
  get transferTo(): string | undefined {
    return this.transferNumber;
  }

  /** Runs the calls of one answer at once; each one's result for the model, in order. Never rejects. */
  run(calls: RequestedCall[]): Promise<string[]> {
    const said = new Set<string>();
    const outcomes = calls.map((call, index) =>
      index < MAX_CALLS_PER_ANSWER
        ? this.runOne(call, said)
        : Promise.resolve(
            this.outcome(
              call,
              call.arguments,
              errorResult(`At most ${MAX_CALLS_PER_ANSWER} tool calls run at once; make this one after them`),
            ),
          ),
    );
    this.outcomes.push(...outcomes);
    return Promise.all(outcomes.map(async (outcome) => (await outcome).result));
  }

  /** The transcript entries of every call made, in order, once each has ended. */
  async entries(): Promise<string[]> {
    return (await Promise.all(this.outcomes)).map((outcome) => outcome.entry);
  }

  /** One call; `said` holds the words already told to whileRunning in this round (each said once). */
  private async runOne(call: RequestedCall, said: Set<string>): Promise<CallOutcome> {
    const tool = this.byName.get(call.name);
    if (!tool) {
      return this.outcome(
        call,
        call.arguments,
        errorResult(`There is no tool named ${cut(call.name, 64)}; the tools are: ${[...this.byName.keys()].join(', ')}`),
      );
    }
    const parsed = parseArguments(call.arguments);
    if (typeof parsed === 'string') return this.outcome(call, call.arguments, errorResult(parsed));
    const args = JSON.stringify(parsed);
    switch (tool.type) {
      case 'end_call':
        if (this.transferNumber) return this.outcome(call, args, errorResult(ALREADY_LEAVING));
        this.hungUp = true;
        return this.outcome(call, args, END_CALL_RESULT);
      case 'transfer_call':
        if (!this.onThePhone) return this.outcome(call, args, errorResult(NOT_A_PHONE_CALL));
        if (this.hungUp || this.transferNumber) return this.outcome(call, args, errorResult(ALREADY_LEAVING));
        this.transferNumber = tool.number!;
        return this.outcome(call, args, transferResult(tool.number!));
      case 'webhook': {
        let problem: string | undefined;
        try {
          problem = argumentsProblem(tool.parameters ?? NO_PARAMETERS, parsed);
        } catch {
          problem = "its parameters' schema could not be used";
        }
        if (problem) return this.outcome(call, args, errorResult(`The arguments do not match the tool's parameters: ${problem}`));
        const words = tool.speakWhileRunning ?? '';
        if (words.trim() && !said.has(words)) {
          said.add(words);
          this.whileRunning(words);
        }
        try {
          const { result, failure } = await this.send(tool, parsed);
          if (failure) this.logger.warn({ tool: { id: tool.id, ...failure } }, 'A tool call failed; the model was told why');
          return this.outcome(call, args, result);
        } catch (error) {
          this.logger.error({ tool: { id: tool.id }, error: { name: (error as Error)?.name } }, 'A tool call failed unexpectedly');
          return this.outcome(call, args, errorResult('The tool request failed'));
        }
      }
    }
  }

  private outcome(call: RequestedCall, args: string, result: string): CallOutcome {
    return { result, entry: entryOf(call.name, args, result) };
  }
}

/** The model's arguments as an object, or why they are not one (an empty text is no arguments). */
function parseArguments(text: string): object | string {
  if (text.length > MAX_ARGUMENTS_LENGTH) return `The arguments are longer than ${MAX_ARGUMENTS_LENGTH} characters`;
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'The arguments are not valid JSON';
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'The arguments must be a JSON object';
  return value;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Runs the tools of conversations' turns: loads an agent's tools for a turn (TurnTools), and sends a webhook tool's
 * request, signed like a webhook delivery with the tool's secrets, through the webhooks' SSRF-checked client, within
 * the tool's timeoutSeconds and reading at most 16 KiB of its answer.
 */
@Injectable()
export class ToolCalls {
  private readonly logger = new Logger('Tools');

  constructor(
    private readonly tools: ToolsRepository,
    private readonly targets: WebhookTargets,
  ) {}

  /** The turn's tools: these of the account (another account's or deleted ones are left out); undefined when none is left. */
  async forTurn(
    accountId: number,
    toolIds: number[],
    conversation: ToolConversation,
    whileRunning?: (words: string) => void,
  ): Promise<TurnTools | undefined> {
    if (toolIds.length === 0) return undefined;
    const tools = await this.tools.callable(accountId, toolIds);
    if (tools.length === 0) return undefined;
    const send: Send = (tool, args) => this.post(tool, args, conversation);
    return new TurnTools(tools, send, this.logger, conversation.channel === 'phone', whileRunning);
  }

  private async post(tool: CallableTool, args: object, conversation: ToolConversation): ReturnType<Send> {
    const id = `tc_${randomUUID().replace(/-/g, '')}`;
    const body = JSON.stringify({ id, tool: tool.name, arguments: args, conversation });
    const timeoutSeconds = tool.timeoutSeconds!;
    const answer = await this.targets.post(tool.url!, signedHeaders(tool.secrets, id, body), body, {
      timeoutMs: timeoutSeconds * 1000,
      maxBodyBytes: MAX_RESULT_BYTES,
      overflow: 'fail',
    });
    if ('error' in answer) {
      return { result: errorResult(failureWords(answer.code, timeoutSeconds)), failure: { kind: answer.code ?? 'unknown' } };
    }
    const { statusCode, body: content } = answer;
    if (statusCode < 200 || statusCode > 299) {
      const words =
        statusCode >= 300 && statusCode < 400
          ? `The tool answered with a redirect (HTTP ${statusCode}), which is not followed`
          : `The tool answered with HTTP ${statusCode}`;
      return { result: errorResult(words), failure: { kind: 'http-status', status: statusCode } };
    }
    let text: string;
    try {
      text = utf8.decode(content);
    } catch {
      return { result: errorResult("The tool's answer is not UTF-8 text"), failure: { kind: 'not-text', status: statusCode } };
    }
    return { result: text.trim() === '' ? JSON.stringify({ ok: true }) : text };
  }
}
