import { AnswererFailure } from './answerer';

/** A call the model asked for, assembled from the deltas of its streamed answer. */
export interface AssembledCall {
  id: string;
  name: string;
  arguments: string;
}

/** Calls kept of one answer (the tool runner runs at most 10 and tells the model about the others). */
const MAX_CALLS = 64;
/** An id or name longer than this is cut (a Chat Completions function name is at most 64 characters). */
const MAX_LABEL_LENGTH = 256;
/** One call's arguments kept, at most (the model's text is bounded by LLM_MAX_TOKENS anyway). */
const MAX_ARGUMENTS_LENGTH = 256 * 1024;

interface Slot extends AssembledCall {
  /** The provider's `index` of the call. */
  index: number | undefined;
}

const invalid = () => new AnswererFailure('invalid-response');

/** A piece of text of a delta, when there is one: undefined or null is none, anything but a string is garbage. */
function text(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid();
  return value;
}

/** `piece` added to `so` far: providers split ids and names across chunks, and some repeat them whole in every chunk. */
const joined = (so: string, piece: string | undefined) =>
  piece === undefined || piece === so ? so : `${so}${piece}`.slice(0, MAX_LABEL_LENGTH);

function isCompleteJson(candidate: string): boolean {
  try {
    JSON.parse(candidate);
    return true;
  } catch {
    return false;
  }
}

/**
 * The `tool_calls` deltas of a streamed Chat Completions answer, assembled into calls. As providers send them:
 * - OpenAI (and vLLM, llama.cpp's server): a call's first delta has its `index`, `id`, `type` and `function.name`,
 *   and its arguments follow in pieces (`function.arguments`) under the same `index`; several calls in one answer
 *   have indexes 0, 1, …, their deltas possibly interleaved;
 * - Ollama: each call whole in one delta (id, name and arguments), and older versions give every call of a
 *   parallel batch `index` 0: a new id at an index whose call is already complete (a name, and arguments that
 *   parse) starts another call;
 * - ids and names may come in pieces too, or repeated whole in every delta (a piece equal to what is there
 *   already adds nothing); a delta without `index` continues the last call, unless its id starts another.
 * Anything that is not of these shapes is an invalid answer.
 */
export class ToolCallDeltas {
  private readonly slots: Slot[] = [];

  /** One chunk's `delta.tool_calls` (undefined or null: none). */
  add(deltas: unknown): void {
    if (deltas === undefined || deltas === null) return;
    if (!Array.isArray(deltas)) throw invalid();
    for (const delta of deltas as unknown[]) this.addOne(delta);
  }

  /** The calls, in the order they were begun, each with an id (one made up when the provider gave none). */
  calls(): AssembledCall[] {
    return this.slots
      .filter((slot) => slot.name !== '')
      .map((slot, position) => ({ id: slot.id || `call_${position}`, name: slot.name, arguments: slot.arguments }));
  }

  private addOne(delta: unknown): void {
    if (delta === null || typeof delta !== 'object' || Array.isArray(delta)) throw invalid();
    const { index, id, function: fn } = delta as { index?: unknown; id?: unknown; function?: unknown };
    if (index !== undefined && index !== null && !(typeof index === 'number' && Number.isSafeInteger(index) && index >= 0)) throw invalid();
    if (fn !== undefined && fn !== null && (typeof fn !== 'object' || Array.isArray(fn))) throw invalid();
    const { name, arguments: args } = (fn ?? {}) as { name?: unknown; arguments?: unknown };
    const piece = { id: text(id), name: text(name), arguments: text(args) };
    const slot = this.slotFor(typeof index === 'number' ? index : undefined, piece.id);
    if (!slot) return;
    slot.id = joined(slot.id, piece.id);
    slot.name = joined(slot.name, piece.name);
    if (piece.arguments !== undefined && slot.arguments.length + piece.arguments.length <= MAX_ARGUMENTS_LENGTH)
      slot.arguments += piece.arguments;
  }

  /** The call a delta belongs to: the one at its index (or the last), or a new one; undefined past MAX_CALLS. */
  private slotFor(index: number | undefined, id: string | undefined): Slot | undefined {
    const existing = index === undefined ? this.slots.at(-1) : this.slots.findLast((slot) => slot.index === index);
    const startsAnother =
      existing !== undefined &&
      !!id &&
      existing.id !== '' &&
      id !== existing.id &&
      existing.name !== '' &&
      isCompleteJson(existing.arguments);
    if (existing && !startsAnother) return existing;
    if (this.slots.length >= MAX_CALLS) return undefined;
    const slot: Slot = { index, id: '', name: '', arguments: '' };
    this.slots.push(slot);
    return slot;
  }
}
