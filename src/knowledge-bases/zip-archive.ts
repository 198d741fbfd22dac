import { inflateRawSync } from 'node:zlib';
import { FileReadError } from './file-read-error';

/**
 * The checks a DOCX (a ZIP archive of XML parts) passes before mammoth reads it: mammoth (through JSZip)
 * inflates the parts it reads whole, in memory, whatever size the archive declares for them, so a zip bomb
 * (a few kilobytes that inflate to gigabytes) is found first, here, by inflating each XML part with a bound on
 * what it may produce. Images and other binary parts are not read for text, and not inflated.
 */

/** The most XML (all parts together) a Word document may inflate to: a few thousand pages of text. */
export const DOCX_MAX_XML_BYTES = 100 * 1024 * 1024;
/** The most entries an archive may list. */
const MAX_ENTRIES = 10_000;

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const CENTRAL_DIRECTORY_ENTRY = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;
/** The end record is 22 bytes, followed by a comment of at most 65,535. */
const END_RECORD_SEARCH = 22 + 0xffff;
const STORED = 0;
const DEFLATED = 8;

interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  localHeaderOffset: number;
}

const notWord = () => new FileReadError('The file is a ZIP archive but not a Word document (.docx)');
const damaged = () => new FileReadError('The file is not a readable Word document (.docx): it is damaged');
const bomb = () =>
  new FileReadError(
    `The Word document expands to more than ${DOCX_MAX_XML_BYTES / 1024 / 1024} MiB of text and markup (a zip bomb, or a document too large to read)`,
  );

export function checkDocxArchive(archive: Buffer): void {
  const entries = centralDirectory(archive);
  const names = new Set(entries.map((entry) => entry.name));
  if (!names.has('[Content_Types].xml') || !entries.some((entry) => entry.name.startsWith('word/'))) throw notWord();
  let budget = DOCX_MAX_XML_BYTES;
  for (const entry of entries.filter((candidate) => /\.(xml|rels)$/i.test(candidate.name))) {
    budget -= inflatedSize(archive, entry, budget);
    if (budget < 0) throw bomb();
  }
}

/** The entries the archive's central directory lists. */
function centralDirectory(archive: Buffer): ZipEntry[] {
  const end = findEndRecord(archive);
  const count = archive.readUInt16LE(end + 10);
  if (count > MAX_ENTRIES) throw damaged();
  let offset = archive.readUInt32LE(end + 16);
  const entries: ZipEntry[] = [];
  for (let index = 0; index < count; index++) {
    if (offset + 46 > archive.length || archive.readUInt32LE(offset) !== CENTRAL_DIRECTORY_ENTRY) throw damaged();
    const nameLength = archive.readUInt16LE(offset + 28);
    const extraLength = archive.readUInt16LE(offset + 30);
    const commentLength = archive.readUInt16LE(offset + 32);
    entries.push({
      method: archive.readUInt16LE(offset + 10),
      compressedSize: archive.readUInt32LE(offset + 20),
      localHeaderOffset: archive.readUInt32LE(offset + 42),
      name: archive.toString('utf8', offset + 46, offset + 46 + nameLength),
    });
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

function findEndRecord(archive: Buffer): number {
  for (let offset = archive.length - 22; offset >= Math.max(0, archive.length - END_RECORD_SEARCH); offset--) {
    if (archive.readUInt32LE(offset) === END_OF_CENTRAL_DIRECTORY) return offset;
  }
  throw damaged();
}

/** What an entry inflates to, counted up to `budget` + 1 bytes (past that, inflating stops). */
function inflatedSize(archive: Buffer, entry: ZipEntry, budget: number): number {
  const header = entry.localHeaderOffset;
  if (header + 30 > archive.length || archive.readUInt32LE(header) !== LOCAL_FILE_HEADER) throw damaged();
  const start = header + 30 + archive.readUInt16LE(header + 26) + archive.readUInt16LE(header + 28);
  const data = archive.subarray(start, start + entry.compressedSize);
  if (data.length !== entry.compressedSize) throw damaged();
  if (entry.method === STORED) return data.length;
  if (entry.method !== DEFLATED) throw damaged();
  try {
    return inflateRawSync(data, { maxOutputLength: Math.max(1, budget + 1) }).length;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return budget + 1;
    throw damaged();
  }
}
