/**
 * Writes the files the knowledge-file tests upload (test/fixtures/knowledge/, committed): real PDFs (pdfkit, with
 * Noto Sans Devanagari and Tamil for Hindi and Tamil), a DOCX (docx), and hostile files made to measure: a PDF
 * with a password, one of scanned images only, a PDF whose page makes the parser work for minutes, a DOCX zip
 * bomb, damaged files. The tests and bench/knowledge-files.ts also make PDFs with `textPdf`.
 *   node -r ./scripts/register.js scripts/knowledge-fixtures.ts
 */
import { Document, HeadingLevel, Packer, Paragraph } from 'docx';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { constants, crc32, deflateRawSync, deflateSync } from 'node:zlib';

export const FIXTURES = path.join(__dirname, '..', 'test', 'fixtures', 'knowledge');

/** The parts of pdfkit used here (it ships no types). */
interface PdfKitDocument {
  on(event: 'data', listener: (chunk: Buffer) => void): void;
  on(event: 'end', listener: () => void): void;
  font(source: string): PdfKitDocument;
  fontSize(size: number): PdfKitDocument;
  text(text: string, options?: { paragraphGap?: number }): PdfKitDocument;
  image(source: Buffer, x: number, y: number, options?: { width?: number }): PdfKitDocument;
  addPage(): PdfKitDocument;
  end(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- pdfkit has no type declarations: typed by PdfKitDocument
const PDFDocument = require('pdfkit') as new (options?: { userPassword?: string; ownerPassword?: string; info?: object }) => PdfKitDocument;

const FONTS = {
  devanagari: require.resolve('@fontsource/noto-sans-devanagari/files/noto-sans-devanagari-devanagari-400-normal.woff'),
  tamil: require.resolve('@fontsource/noto-sans-tamil/files/noto-sans-tamil-tamil-400-normal.woff'),
};

/** A paragraph of a PDF page, in one of the fonts (Helvetica by default). */
export interface PdfParagraph {
  text: string;
  font?: keyof typeof FONTS;
}

/** A PDF of these pages (each a list of paragraphs), as pdfkit writes it; with `userPassword`, encrypted. */
export function textPdf(pages: (string | PdfParagraph)[][], options: { userPassword?: string } = {}): Promise<Buffer> {
  const document = new PDFDocument({ ...options, info: { Title: 'Fixture' } });
  const chunks: Buffer[] = [];
  document.on('data', (chunk) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve) => document.on('end', () => resolve(Buffer.concat(chunks))));
  pages.forEach((paragraphs, index) => {
    if (index > 0) document.addPage();
    for (const paragraph of paragraphs) {
      const { text, font } = typeof paragraph === 'string' ? { text: paragraph, font: undefined } : paragraph;
      document
        .font(font ? FONTS[font] : 'Helvetica')
        .fontSize(12)
        .text(text, { paragraphGap: 10 });
    }
  });
  document.end();
  return done;
}

/** The sentence only page 3 of faq.pdf holds (the tests search for it). */
export const PAGE_THREE_SENTENCE = 'The rooftop garden is open to members on Saturday evenings from seven until ten.';
export const HINDI_SENTENCE = 'दुकान सुबह नौ बजे खुलती है और रात दस बजे बंद होती है।';
export const TAMIL_SENTENCE = 'தமிழ் புத்தகம் நாடு முழுவதும் அனுப்பப்படும்.';

/** Filler pages: paragraphs of a store's policies, numbered so that no two passages are alike. */
export function policyPage(page: number, paragraphs = 4): string[] {
  return Array.from(
    { length: paragraphs },
    (_, index) =>
      `Policy ${page}.${index + 1}: customers may return any unopened product within thirty days of purchase with the receipt. ` +
      `Refunds are paid to the original card within five working days, and store credit is offered for items without a receipt.`,
  );
}

/** A PNG of `size` × `size` grey pixels with a diagonal pattern (the page of a scanned document, without text). */
function png(size: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale
  const rows = Buffer.alloc(size * (size + 1));
  for (let y = 0; y < size; y++) for (let x = 0; x < size; x++) rows[y * (size + 1) + 1 + x] = (x + y) % 16 < 8 ? 40 : 220;
  return Buffer.concat([
    Buffer.from('89504e470d0a1a0a', 'hex'),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A PDF whose pages are images only, like a scan without text recognition. */
function scannedPdf(): Promise<Buffer> {
  const document = new PDFDocument();
  const chunks: Buffer[] = [];
  document.on('data', (chunk) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve) => document.on('end', () => resolve(Buffer.concat(chunks))));
  document.image(png(256), 72, 72, { width: 400 });
  document.addPage().image(png(128), 72, 72, { width: 400 });
  document.end();
  return done;
}

/**
 * A one-page PDF, written by hand, whose content stream inflates to `count` repetitions of `operators`: a few
 * hundred kilobytes that keep a parser busy for many seconds or, each text on a line of its own, fill its memory.
 */
function laboriousPdf(count: number, operators: string): Buffer {
  return onePagePdf(deflateSync(Buffer.from(`BT /F1 12 Tf 72 720 Td ${operators.repeat(count)}ET`, 'latin1'), { level: 9 }));
}

/**
 * A one-page PDF whose content stream inflates to `mib` MiB of blank space: about a kilobyte a MiB, which a reader
 * holds whole once inflated, outside its heap (pdf.js keeps a stream's inflated bytes in one growing buffer).
 */
export function inflatingPdf(mib: number): Buffer {
  // A zlib stream: its header, the deflated blocks, and a checksum pdf.js does not check.
  const { deflated } = repeatedDeflate(Buffer.alloc(1024 * 1024, ' '), mib);
  return onePagePdf(Buffer.concat([Buffer.from([0x78, 0xda]), deflated, Buffer.alloc(4)]));
}

/** A one-page PDF, written by hand, whose content stream is `content` (zlib-deflated). */
function onePagePdf(content: Buffer): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    null,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n', 'latin1')];
  const offsets: number[] = [];
  let length = parts[0].length;
  objects.forEach((object, index) => {
    const body =
      object === null
        ? Buffer.concat([
            Buffer.from(`${index + 1} 0 obj\n<< /Length ${content.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'),
            content,
            Buffer.from('\nendstream\nendobj\n', 'latin1'),
          ])
        : Buffer.from(`${index + 1} 0 obj\n${object}\nendobj\n`, 'latin1');
    offsets.push(length);
    parts.push(body);
    length += body.length;
  });
  const xref = [
    `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`,
    ...offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`),
  ];
  parts.push(
    Buffer.from(`${xref.join('')}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`, 'latin1'),
  );
  return Buffer.concat(parts);
}

/** An entry's data deflated already (as repeatedDeflate makes it), with its CRC-32 and inflated size. */
export interface DeflatedData {
  deflated: Buffer;
  crc: number;
  size: number;
}

/** `piece` repeated `times` times, deflated without ever being held whole: a zip bomb's part, of any size. */
export function repeatedDeflate(piece: Buffer, times: number): DeflatedData {
  // Each block flushed whole, so that it can be repeated as it is; then an empty final block.
  const block = deflateRawSync(piece, { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  let crc = 0;
  for (let index = 0; index < times; index++) crc = crc32(piece, crc);
  return { deflated: Buffer.concat([...Array<Buffer>(times).fill(block), Buffer.from([3, 0])]), crc, size: piece.length * times };
}

/** A ZIP archive of these entries (deflated), as a DOCX is. */
export function zipArchive(entries: ({ name: string; data: Buffer } | ({ name: string } & DeflatedData))[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const { name } = entry;
    const {
      deflated: compressed,
      crc,
      size,
    } = 'data' in entry ? { deflated: deflateRawSync(entry.data, { level: 9 }), crc: crc32(entry.data), size: entry.data.length } : entry;
    const nameBytes = Buffer.from(name, 'utf8');
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(compressed.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(compressed.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, compressed);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + compressed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const CONTENT_TYPES_XML = Buffer.from(
  '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
    '<Default Extension="xml" ContentType="application/xml"/>' +
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
);
const RELS_XML = Buffer.from(
  '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
);

/** A DOCX whose document part inflates to `bytes` bytes of one paragraph's text (a zip bomb when large). */
export function bombDocx(bytes: number): Buffer {
  const open =
    '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>';
  const close = '</w:t></w:r></w:p></w:body></w:document>';
  const document = Buffer.alloc(bytes, 'a');
  document.write(open, 0, 'utf8');
  document.write(close, bytes - close.length, 'utf8');
  return zipArchive([
    { name: '[Content_Types].xml', data: CONTENT_TYPES_XML },
    { name: '_rels/.rels', data: RELS_XML },
    { name: 'word/document.xml', data: document },
  ]);
}

/**
 * A DOCX whose main document is `mib` MiB of text in a part not named like XML (`_rels/.rels` points mammoth at it,
 * whatever its name): a zip bomb that a check of the `.xml` parts alone misses.
 */
export function renamedPartBombDocx(mib: number, partName = 'word/doc.bin'): Buffer {
  const rels = RELS_XML.toString().replace('word/document.xml', partName);
  return zipArchive([
    { name: '[Content_Types].xml', data: CONTENT_TYPES_XML },
    { name: '_rels/.rels', data: Buffer.from(rels) },
    { name: partName, ...repeatedDeflate(Buffer.alloc(1024 * 1024, 'a'), mib) },
  ]);
}

function faqDocx(): Promise<Buffer> {
  const document = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: 'Warranty and repairs', heading: HeadingLevel.HEADING_1 }),
          new Paragraph('Every blender carries a warranty of two years from the date of delivery.'),
          new Paragraph('Repairs under warranty are free of charge at any of our service centres.'),
          new Paragraph({ text: 'हिंदी', heading: HeadingLevel.HEADING_2 }),
          new Paragraph(HINDI_SENTENCE),
          new Paragraph({ text: 'தமிழ்', heading: HeadingLevel.HEADING_2 }),
          new Paragraph(TAMIL_SENTENCE),
        ],
      },
    ],
  });
  return Packer.toBuffer(document);
}

const HTML = `<!doctype html><html><head><meta charset="utf-8"><title>Delivery</title><script>var trackingOnly = 1;</script></head>
<body><nav><a href="/">Home</a> navigationonlyword</nav><article><h1>Delivery</h1>
${[1, 2, 3, 4, 5].map((n) => `<p>Zone ${n}: parcels to the suburbs arrive within ${n + 1} working days of dispatch, tracked by text message.</p>`).join('\n')}
</article><footer>footeronlyword</footer></body></html>\n`;

const MARKDOWN =
  '# Loyalty programme\n\nMembers earn **one point** for every hundred rupees spent.\n\n- Points expire after eighteen months.\n';

const CSV =
  'Product,Price (INR),Notes\n' +
  'Mixer grinder,3499,"Three jars, 750 W"\n' +
  'Pressure cooker,1899,"Five litres; ""induction"" base"\n' +
  'Ceiling fan,2250,Energy saving\n';

async function main(): Promise<void> {
  mkdirSync(FIXTURES, { recursive: true });
  const write = (name: string, data: Buffer | string) => writeFileSync(path.join(FIXTURES, name), data);
  write(
    'faq.pdf',
    await textPdf([
      ['Store handbook', ...policyPage(1, 3)],
      policyPage(2),
      [...policyPage(3, 2), PAGE_THREE_SENTENCE, ...policyPage(3, 1)],
      policyPage(4),
      policyPage(5),
    ]),
  );
  write(
    'languages.pdf',
    await textPdf([
      ['Opening hours in Hindi and Tamil', { text: HINDI_SENTENCE, font: 'devanagari' }, { text: TAMIL_SENTENCE, font: 'tamil' }],
    ]),
  );
  write('protected.pdf', await textPdf([['Secret prices: the wholesale discount is forty percent.']], { userPassword: 'open sesame' }));
  write('scanned.pdf', await scannedPdf());
  write('laborious.pdf', laboriousPdf(20_000_000, '(a) Tj '));
  write('hungry.pdf', laboriousPdf(1_000_000, '(ab) Tj 0 -12 Td (cd) Tj 0 12 Td '));
  write('faq.docx', await faqDocx());
  write('bomb.docx', bombDocx(512 * 1024 * 1024));
  write(
    'not-word.zip',
    zipArchive([
      { name: '[Content_Types].xml', data: CONTENT_TYPES_XML },
      { name: 'notes/readme.xml', data: Buffer.from('<notes>not a Word document</notes>') },
    ]),
  );
  write('delivery.html', HTML);
  write('loyalty.md', MARKDOWN);
  write('prices.csv', CSV);
  write('bom.txt', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Gift wrapping is free during the festival season.\n')]));
  write('utf16.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Parking is free for customers after six.\n', 'utf16le')]));
  write('latin1.txt', Buffer.from('Crème brûlée is served on Sundays.\n', 'latin1'));
  write('picture.png', png(16));
  console.log(`Wrote the fixtures into ${path.relative(process.cwd(), FIXTURES)}`);
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
