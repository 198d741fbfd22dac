import {
  BadRequestException,
  Injectable,
  NotFoundException,
  PayloadTooLargeException,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { RequestWithAccount } from '../auth/current-account.decorator';
import { IntIdPipe } from '../common/id.pipes';
import { sizeInWords } from '../recordings/byte-limit';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { cleanFileName } from './file-name';
import { FileKind, SNIFF_BYTES, sniffFileKind, UNSUPPORTED_FILE_TYPE } from './file-type';
import { KnowledgeBasesRepository } from './knowledge-bases.repository';

/** An upload is stored in pieces of this size (a row each): what the service holds of an upload at a time. */
export const FILE_CHUNK_BYTES = 1024 * 1024;

/** A file part as multer hands it to a storage engine. */
export interface FilePart {
  fieldname: string;
  originalname: string;
  mimetype: string;
  stream: Readable;
}

/** A stored upload, as the route gets it (`@UploadedFile()`): not yet a source. */
export interface StoredUpload {
  fileId: string;
  fileName: string;
  kind: FileKind;
  bytes: number;
  /** The file's SHA-256, hex: what identifies the upload's body for its Idempotency-Key. */
  sha256: string;
}

const REFUSAL_LISTENER = Symbol('uploadRefusalListener');

/** The requests this engine serves: authenticated, on a route with `:kbId`. */
type UploadRequest = RequestWithAccount & {
  params: Record<string, string | string[] | undefined>;
  [REFUSAL_LISTENER]?: (error: Error) => void;
};

/**
 * Calls `listener` when the engine refuses this request's upload (404, 413, 415, a storage failure): multer
 * itself reports an error only once the rest of the body has arrived, which the listener need not wait for.
 */
export function onUploadRefusal(request: object, listener: (error: Error) => void): void {
  (request as UploadRequest)[REFUSAL_LISTENER] = listener;
}

export const fileTooLarge = (maxBytes: number) => new PayloadTooLargeException(`A file may be at most ${sizeInWords(maxBytes)}`);

/**
 * multer's storage engine for knowledge-base files: streams the `file` part into PostgreSQL
 * (knowledge_file_chunks), FILE_CHUNK_BYTES at a time, never the whole file in memory. Before storing anything
 * it checks the knowledge base (404) and the file's first bytes (415); while storing, it counts (413 one byte
 * past KNOWLEDGE_MAX_FILE_BYTES). Whatever refuses or fails the upload, nothing of it is left.
 */
@Injectable()
export class KnowledgeFileUploads {
  private readonly knowledgeBaseId = new IntIdPipe('Knowledge base');

  constructor(
    private readonly repository: KnowledgeBasesRepository,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /** multer's StorageEngine. */
  _handleFile(request: UploadRequest, file: FilePart, callback: (error: Error | null, stored?: StoredUpload) => void): void {
    this.store(request, file).then(
      (stored) => callback(null, stored),
      (error: Error) => {
        request[REFUSAL_LISTENER]?.(error);
        callback(error);
      },
    );
  }

  /** multer's StorageEngine: called for a stored upload whose request failed afterwards. */
  _removeFile(request: UploadRequest, stored: StoredUpload, callback: (error: Error | null) => void): void {
    this.discard(request, stored).then(
      () => callback(null),
      (error: Error) => callback(error),
    );
  }

  /** Deletes a stored upload that did not become a source (a later refusal: the form's fields, the handler). */
  async discard(request: UploadRequest, stored: StoredUpload): Promise<void> {
    await this.repository.deleteUnattachedFile(accountIdOf(request), stored.fileId);
  }

  private async store(request: UploadRequest, file: FilePart): Promise<StoredUpload> {
    const accountId = accountIdOf(request);
    const knowledgeBaseId = this.knowledgeBaseId.transform(String(request.params.kbId));
    if (!(await this.repository.getKnowledgeBase(accountId, knowledgeBaseId))) {
      throw new NotFoundException(`Knowledge base ${knowledgeBaseId} not found`);
    }
    const fileName = cleanFileName(file.originalname);
    const maxBytes = this.config.knowledgeFiles.maxFileBytes;
    const fileId = randomUUID();
    const pieces = chunksOf(file.stream, FILE_CHUNK_BYTES, SNIFF_BYTES);
    const digest = createHash('sha256');
    let kind: FileKind | undefined;
    let bytes = 0;
    let position = 0;
    try {
      for await (const piece of pieces) {
        kind ??= sniffFileKind(piece, fileName, file.mimetype);
        if (!kind) throw new UnsupportedMediaTypeException(UNSUPPORTED_FILE_TYPE);
        bytes += piece.length;
        if (bytes > maxBytes) throw fileTooLarge(maxBytes);
        digest.update(piece);
        await this.repository.insertFileChunk(accountId, fileId, position++, piece);
      }
    } catch (error) {
      if (position > 0) await this.repository.deleteUnattachedFile(accountId, fileId);
      throw error;
    }
    if (!kind) throw new BadRequestException('The file is empty');
    return { fileId, fileName, kind, bytes, sha256: digest.digest('hex') };
  }
}

function accountIdOf(request: UploadRequest): number {
  if (!request.account) throw new Error('A knowledge-base upload reached its storage without an authenticated account');
  return request.account.id;
}

/**
 * The stream's bytes in pieces of `size` (the last one shorter), the first of them as soon as `firstSize` bytes
 * (or the whole stream, if shorter) have arrived, so that the file's type is known before anything is stored.
 */
async function* chunksOf(stream: Readable, size: number, firstSize: number): AsyncGenerator<Buffer> {
  let parts: Buffer[] = [];
  let length = 0;
  let wanted = firstSize;
  for await (const part of stream as AsyncIterable<Buffer>) {
    parts.push(part);
    length += part.length;
    while (length >= wanted) {
      const joined = Buffer.concat(parts, length);
      yield joined.subarray(0, wanted);
      parts = [joined.subarray(wanted)];
      length -= wanted;
      wanted = size;
    }
  }
  if (length > 0) yield Buffer.concat(parts, length);
}
