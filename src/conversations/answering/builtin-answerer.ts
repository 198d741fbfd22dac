import { Injectable } from '@nestjs/common';
import { Answerer, QUESTION_NOTED, ReplyRequest } from './answerer';

/** Words, with the white space after them; a word longer than 32 code points is cut (scripts without spaces). */
const PIECES = /\S{1,32}\s*/gu;

/**
 * The answerer without a provider (no LLM_BASE_URL): offline and deterministic. It replies with the best
 * passage of the agent's knowledge bases for the visitor's message, or, when none matches, a fixed sentence
 * saying the question was noted. The reply comes word by word, so that streaming clients see it stream.
 */
@Injectable()
export class BuiltInAnswerer extends Answerer {
  async *reply(request: ReplyRequest, signal?: AbortSignal): AsyncIterable<string> {
    const text = request.passages[0]?.text.trim() || QUESTION_NOTED;
    for (const piece of text.match(PIECES) ?? [text]) {
      if (signal?.aborted) return;
      yield piece;
    }
  }
}
