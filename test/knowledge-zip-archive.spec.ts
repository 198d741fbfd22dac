import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { repeatedDeflate, zipArchive } from '../scripts/knowledge-fixtures';
import { checkDocxArchive } from '../src/knowledge-bases/zip-archive';

/**
 * The checks a DOCX passes before mammoth reads it (zip-archive.ts): every entry bounded whatever its name, by the
 * sizes the entries declare and by what each really inflates to, and no archive that JSZip (mammoth's reader) would
 * read otherwise than the check does. Uploads of such files end `failed` with these reasons (knowledge-files.spec.ts).
 */

const FAQ = readFileSync(path.join(__dirname, 'fixtures', 'knowledge', 'faq.docx'));
const DAMAGED = 'The file is not a readable Word document (.docx): it is damaged';
const BOMB = 'The Word document expands to more than 100 MiB (a zip bomb, or a document too large to read)';
const WORD_PARTS = [
  { name: '[Content_Types].xml', data: Buffer.from('<Types/>') },
  { name: 'word/document.xml', data: Buffer.from('<w:document/>') },
];
const END_RECORD = 0x06054b50;

/** Where the archive's end record is (it has no comment here). */
const endRecord = (archive: Buffer) => {
  const at = archive.length - 22;
  expect(archive.readUInt32LE(at)).toBe(END_RECORD);
  return at;
};

describe('the check of a DOCX archive', () => {
  it('passes a Word document', async () => {
    await expect(checkDocxArchive(FAQ)).resolves.toBeUndefined();
  });

  it('refuses parts that declare more than 100 MiB together, whatever their names, before inflating any', async () => {
    const megabyte = repeatedDeflate(Buffer.alloc(1024 * 1024, 'a'), 1);
    const parts = Array.from({ length: 101 }, (_, index) => ({ name: `media/image${index}.bin`, ...megabyte }));
    await expect(checkDocxArchive(zipArchive([...WORD_PARTS, ...parts]))).rejects.toThrow(BOMB);
  });

  it('refuses a part that inflates to more than it declares, whatever its name', async () => {
    // 200 MiB declared as 1 KiB: the declared sizes add up to little; the inflating stops a byte past the KiB.
    const lying = { name: 'word/doc.bin', ...repeatedDeflate(Buffer.alloc(1024 * 1024, 'a'), 200), size: 1024 };
    await expect(checkDocxArchive(zipArchive([...WORD_PARTS, lying]))).rejects.toThrow(DAMAGED);
  });

  it('refuses an archive with data before it (JSZip would shift every offset by its length)', async () => {
    await expect(checkDocxArchive(Buffer.concat([Buffer.alloc(100, ' '), FAQ]))).rejects.toThrow(DAMAGED);
  });

  it('refuses a directory with more records than its end record counts (JSZip would read them all)', async () => {
    const archive = Buffer.from(FAQ);
    const end = endRecord(archive);
    const count = archive.readUInt16LE(end + 10);
    archive.writeUInt16LE(count - 1, end + 8);
    archive.writeUInt16LE(count - 1, end + 10);
    await expect(checkDocxArchive(archive)).rejects.toThrow(DAMAGED);
  });

  it('refuses an archive that says it is ZIP64 (sizes and offsets elsewhere)', async () => {
    const archive = Buffer.from(FAQ);
    archive.writeUInt32LE(0xffffffff, endRecord(archive) + 16);
    await expect(checkDocxArchive(archive)).rejects.toThrow(DAMAGED);
  });
});
