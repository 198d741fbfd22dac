import { parse } from 'csv-parse/sync';
import * as fc from 'fast-check';
import { csvCell, csvLine } from './csv';

describe("the export's CSV writer", () => {
  it.each([
    ['plain', 'plain'],
    ['', ''],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['line\nbreak', '"line\nbreak"'],
    ['line\r\nbreak', '"line\r\nbreak"'],
    ['=1+1', "'=1+1"],
    ['+91 98765', "'+91 98765"],
    ['-5', "'-5"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tx', "'\tx"],
    ['\rx', '"\'\rx"'],
    ['＝1', "'＝1"],
    ['=HYPERLINK("x","y")', '"\'=HYPERLINK(""x"",""y"")"'],
    ['a=1', 'a=1'],
    [' =1', ' =1'],
    ['प्रिया 🙂 𝄞', 'प्रिया 🙂 𝄞'],
  ])('writes %j as %j', (value, written) => {
    expect(csvCell(value)).toBe(written);
  });

  it('ends each record with CRLF', () => {
    expect(csvLine(['a', 'b,c', ''])).toBe('a,"b,c",\r\n');
  });

  it('round-trips any cells through a real CSV parser, a formula coming back with its quote prefix only', () => {
    const cell = fc.oneof(
      fc.string(),
      fc.string({ unit: 'grapheme' }),
      fc.constantFrom('"', ',', '\r', '\n', '\r\n', '=', '+', '-', '@', '\t', '"=1"'),
    );
    fc.assert(
      fc.property(fc.array(fc.array(cell, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }), (records) => {
        const text = records.map(csvLine).join('');
        const parsed = parse(text, { relax_column_count: true });
        const expected = records.map((cells) =>
          cells.map((value) => (/^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/.test(value) ? `'${value}` : value)),
        );
        expect(parsed).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });
});
