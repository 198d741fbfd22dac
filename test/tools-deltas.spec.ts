import { AnswererFailure } from '../src/conversations/answering/answerer';
import { ToolCallDeltas } from '../src/conversations/answering/tool-call-deltas';

/** Assembling a streamed answer's `tool_calls` deltas as the providers send them (src/conversations/answering/tool-call-deltas.ts). */
describe('tool call deltas', () => {
  const assemble = (...chunks: unknown[]) => {
    const deltas = new ToolCallDeltas();
    for (const chunk of chunks) deltas.add(chunk);
    return deltas.calls();
  };

  it("joins OpenAI's pieces: the id and name first, the arguments after, several calls by index, interleaved", () => {
    expect(
      assemble(
        [{ index: 0, id: 'call_a', type: 'function', function: { name: 'book_table', arguments: '' } }],
        [{ index: 0, function: { arguments: '{"peo' } }],
        [{ index: 1, id: 'call_b', type: 'function', function: { name: 'lookup', arguments: '' } }],
        [{ index: 0, function: { arguments: 'ple":2}' } }],
        [{ index: 1, function: { arguments: '{}' } }],
      ),
    ).toEqual([
      { id: 'call_a', name: 'book_table', arguments: '{"people":2}' },
      { id: 'call_b', name: 'lookup', arguments: '{}' },
    ]);
  });

  it('joins ids and names split across chunks, and takes one repeated whole in every chunk once', () => {
    expect(
      assemble(
        [{ index: 0, id: 'call_', function: { name: 'book_', arguments: '' } }],
        [{ index: 0, id: 'x1', function: { name: 'table' } }],
        [{ index: 0, id: 'call_x1', function: { name: 'book_table', arguments: '{}' } }],
      ),
    ).toEqual([{ id: 'call_x1', name: 'book_table', arguments: '{}' }]);
  });

  it('tells apart the calls of an Ollama answer that all have index 0, each whole in one delta', () => {
    expect(
      assemble(
        [{ id: 'call_1', index: 0, type: 'function', function: { name: 'run', arguments: '{"command":"ls"}' } }],
        [{ id: 'call_2', index: 0, type: 'function', function: { name: 'run', arguments: '{"command":"ls -l"}' } }],
      ),
    ).toEqual([
      { id: 'call_1', name: 'run', arguments: '{"command":"ls"}' },
      { id: 'call_2', name: 'run', arguments: '{"command":"ls -l"}' },
    ]);
  });

  it('continues the last call on a delta without index, and makes up an id a provider did not give', () => {
    expect(assemble([{ function: { name: 'lookup', arguments: '{"q":' } }], [{ function: { arguments: '1}' } }], null, undefined)).toEqual([
      { id: 'call_0', name: 'lookup', arguments: '{"q":1}' },
    ]);
  });

  it('refuses deltas of another shape as an invalid answer', () => {
    for (const chunk of [
      {},
      'call',
      [null],
      [{ index: -1 }],
      [{ index: 1.5 }],
      [{ function: 'lookup' }],
      [{ function: { name: 7 } }],
      [{ id: {} }],
    ]) {
      expect(() => assemble(chunk)).toThrow(AnswererFailure);
    }
  });
});
