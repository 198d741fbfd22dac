import { createInflateRaw } from 'node:zlib';
import { FileReadError } from './file-read-error';

/**
 * The checks a DOCX (a ZIP archive) passes before mammoth reads it. mammoth (through JSZip) inflates the parts it
 * reads whole, in memory, whatever size the archive declares for them, and which parts it reads is up to the archive
 * (`_rels/.rels` names the main document, whatever its name: `word/doc.bin` will do). So every entry is bounded,
 * whatever its name: the sizes the entries declare may add up to DOCX_MAX_INFLATED_BYTES at most, and each entry is
 * inflated here, as a stream whose output is counted and dropped, to check that it holds no more than it declares.
 *
 * The check must see the very entries JSZip will: an archive that two readers can read differently (data before the
 * archive, which JSZip skips by shifting every offset; records beyond the count the end record gives, which JSZip
 * reads too; ZIP64 fields) is refused as damaged. Word never writes one.
 */

/** The most all the entries of a Word document may inflate to: a few thousand pages of text, with their images. */
export const DOCX_MAX_INFLATED_BYTES = 100 * 1024 * 1024;
/** The most entries an archive may list. */
const MAX_ENTRIES = 10_000;

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const CENTRAL_DIRECTORY_ENTRY = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;
/** The end record is 22 bytes, followed by a comment of at most 65,535. */
const END_RECORD_SEARCH = 22 + 0xffff;
const STORED = 0;
const DEFLATED = 8;
const ENCRYPTED_FLAG = 0x0001;
/** A 32-bit field at this value means its value is in a ZIP64 record. */
const ZIP64_MARK = 0xffffffff;

interface ZipEntry {
  name: string;
  method: number;
  flags: number;
  compressedSize: number;
  /** The size the entry declares it inflates to. */
  size: number;
  localHeaderOffset: number;
}

const notWord = () => new FileReadError('The file is a ZIP archive but not a Word document (.docx)');
const damaged = () => new FileReadError('The file is not a readable Word document (.docx): it is damaged');
const bomb = () =>
  new FileReadError(
    `The Word document expands to more than ${DOCX_MAX_INFLATED_BYTES / 1024 / 1024} MiB (a zip bomb, or a document too large to read)`,
  );

export async function checkDocxArchive(archive: Buffer): Promise<void> {
  const entries = centralDirectory(archive);
  const names = new Set(entries.map((entry) => entry.name));
  if (!names.has('[Content_Types].xml') || !entries.some((entry) => entry.name.startsWith('word/'))) throw notWord();
  if (entries.reduce((sum, entry) => sum + entry.size, 0) > DOCX_MAX_INFLATED_BYTES) throw bomb();
  for (const entry of entries) {
    // No more than it declares (so no more than the total above, all entries together).
    if ((await inflatedSize(archive, entry)) > entry.size) throw damaged();
  }
}

/** The entries the archive's central directory lists, read as JSZip reads them (see above: anything else is damaged). */
function centralDirectory(archive: Buffer): ZipEntry[] {
  const end = findEndRecord(archive);
  const [disk, directoryDisk, onThisDisk, count] = [4, 6, 8, 10].map((at) => archive.readUInt16LE(end + at));
  const size = archive.readUInt32LE(end + 12);
  const start = archive.readUInt32LE(end + 16);
  // One disk, no ZIP64, and the directory ends where the end record starts: no data before the archive, no record beyond the count.
  if (disk !== 0 || directoryDisk !== 0 || onThisDisk !== count || count > MAX_ENTRIES || start + size !== end) throw damaged();
  const entries: ZipEntry[] = [];
  let offset = start;
  for (let index = 0; index < count; index++) {
    if (offset + 46 > end || archive.readUInt32LE(offset) !== CENTRAL_DIRECTORY_ENTRY) throw damaged();
    const nameLength = archive.readUInt16LE(offset + 28);
    const extraLength = archive.readUInt16LE(offset + 30);
    const commentLength = archive.readUInt16LE(offset + 32);
    const entry: ZipEntry = {
      flags: archive.readUInt16LE(offset + 8),
      method: archive.readUInt16LE(offset + 10),
      compressedSize: archive.readUInt32LE(offset + 20),
      size: archive.readUInt32LE(offset + 24),
      localHeaderOffset: archive.readUInt32LE(offset + 42),
      name: archive.toString('utf8', offset + 46, offset + 46 + nameLength),
    };
    if ([entry.compressedSize, entry.size, entry.localHeaderOffset].includes(ZIP64_MARK) || entry.flags & ENCRYPTED_FLAG) throw damaged();
    entries.push(entry);
    offset += 46 + nameLength + extraLength + commentLength;
  }
  if (offset !== end) throw damaged();
  return entries;
}

function findEndRecord(archive: Buffer): number {
  for (let offset = archive.length - 22; offset >= Math.max(0, archive.length - END_RECORD_SEARCH); offset--) {
    if (archive.readUInt32LE(offset) === END_OF_CENTRAL_DIRECTORY) return offset;
  }
  throw damaged();
}

/**
 * What an entry inflates to, counted as it streams out (nothing of it kept), up to one byte past what it declares:
 * past that, inflating stops.
 */
function inflatedSize(archive: Buffer, entry: ZipEntry): Promise<number> {
  const header = entry.localHeaderOffset;
  if (header + 30 > archive.length || archive.readUInt32LE(header) !== LOCAL_FILE_HEADER) throw damaged();
  const start = header + 30 + archive.readUInt16LE(header + 26) + archive.readUInt16LE(header + 28);
  const data = archive.subarray(start, start + entry.compressedSize);
  if (data.length !== entry.compressedSize) throw damaged();
  if (entry.method === STORED) return Promise.resolve(data.length);
  if (entry.method !== DEFLATED) throw damaged();
  return new Promise((resolve, reject) => {
    const inflater = createInflateRaw();
    let bytes = 0;
    inflater.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= entry.size) return;
      inflater.destroy();
      resolve(bytes);
    });
    inflater.once('end', () => resolve(bytes));
    inflater.once('error', () => reject(damaged()));
    inflater.end(data);
  });
}
