/**
 * The rows of a CSV file (RFC 4180: fields in double quotes may hold delimiters, line breaks and doubled
 * quotes), read one at a time. The delimiter is the one of `,`, `;` (spreadsheets in locales with a decimal
 * comma) and tab that the first line holds most often outside quotes.
 */
export class CsvRows {
  private position = 0;
  private readonly delimiter: string;

  constructor(private readonly text: string) {
    this.delimiter = detectDelimiter(text);
  }

  /** The next row's fields, or undefined at the end; blank lines are skipped. */
  next(): string[] | undefined {
    while (this.position < this.text.length) {
      const row = this.readRow();
      if (row.length > 1 || row[0] !== '') return row;
    }
    return undefined;
  }

  private readRow(): string[] {
    const { text, delimiter } = this;
    const fields: string[] = [];
    let field = '';
    let quoted = false;
    while (this.position < text.length) {
      const character = text[this.position++];
      if (quoted) {
        if (character !== '"') field += character;
        else if (text[this.position] === '"') {
          field += '"';
          this.position++;
        } else quoted = false;
      } else if (character === '"' && field === '') quoted = true;
      else if (character === delimiter) {
        fields.push(field);
        field = '';
      } else if (character === '\n' || character === '\r') {
        if (character === '\r' && text[this.position] === '\n') this.position++;
        break;
      } else field += character;
    }
    fields.push(field);
    return fields;
  }
}

const DELIMITERS = [',', ';', '\t'];

function detectDelimiter(text: string): string {
  const counts = new Map(DELIMITERS.map((delimiter) => [delimiter, 0]));
  let quoted = false;
  for (const character of text.slice(0, 64 * 1024)) {
    if (character === '"') quoted = !quoted;
    else if (!quoted && (character === '\n' || character === '\r')) break;
    else if (!quoted && counts.has(character)) counts.set(character, counts.get(character)! + 1);
  }
  return [...counts.entries()].reduce((best, entry) => (entry[1] > best[1] ? entry : best))[0];
}
