import { applyDecorators, CallHandler, ExecutionContext, Injectable, NestInterceptor, UseInterceptors } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { ApiConsumes, ApiExtension, ApiExtraModels, getSchemaPath } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { catchError, from, mergeAll, mergeMap, Observable, race, throwError } from 'rxjs';
import { AcceptsMultipartForm, isMultipartForm } from '../common/json-body.middleware';
import { RequestValidationException } from '../common/validation';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { claimDeferredIdempotency } from '../idempotency/idempotency.guard';
import { CreateSourceDto } from './dto/create-source.dto';
import { SourceUploadForm } from './dto/source-upload-form.dto';
import { fileTooLarge, KnowledgeFileUploads, onUploadRefusal, StoredUpload } from './file-uploads';

/** The OpenAPI extension that names an operation's multipart form (src/openapi.ts makes it the body's `multipart/form-data` content). */
export const MULTIPART_FORM_EXTENSION = 'x-multipart-form';

/** Room for a form's boundaries, part headers and `name` around the file, in a declared Content-Length. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
/** How long a refused upload's connection stays open after the answer, its incoming bytes dropped, before it is cut. */
const LINGER_MS = 2_000;

export const isUpload = (request: Request) => isMultipartForm(request.headers['content-type']);

/**
 * The upload of a file source (contract section 16), on the route that also takes JSON: Nest's FileInterceptor
 * (multer) with KnowledgeFileUploads as its storage engine, so the file streams into storage. Beyond multer:
 * - a declared Content-Length beyond the limit is a 413 before anything is read;
 * - a refusal of the engine (404, 413, 415) is answered at once, instead of after the whole body (multer reads
 *   the rest before it reports an error), and the connection is cut soon after (cutOffAfterAnswer);
 * - a stored upload whose request fails afterwards (the form's fields, the handler) is deleted;
 * - the request's Idempotency-Key is claimed once the file is stored, with the file's digest, name and the
 *   form's other fields as its body: a retry of the same upload replays the first answer (its copy deleted),
 *   another file under the same key is a 422.
 */
@Injectable()
export class SourceUploadInterceptor implements NestInterceptor {
  private readonly multer: NestInterceptor;

  constructor(
    private readonly uploads: KnowledgeFileUploads,
    @InjectConfig() private readonly config: AppConfig,
  ) {
    const Multer = FileInterceptor('file');
    this.multer = new Multer({
      storage: uploads,
      // A file name sent as raw UTF-8 (browsers, curl) is read as UTF-8, not Latin-1.
      defParamCharset: 'utf8',
      limits: { files: 1, fields: 4, parts: 5, fieldNameSize: 100, fieldSize: 4096, headerPairs: 20 },
    });
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request & { file?: StoredUpload }>();
    if (!isUpload(request)) return next.handle();
    const response = context.switchToHttp().getResponse<Response>();
    const maxBytes = this.config.knowledgeFiles.maxFileBytes;
    if (Number(request.headers['content-length']) > maxBytes + FORM_OVERHEAD_BYTES) {
      cutOffAfterAnswer(request, response);
      throw fileTooLarge(maxBytes);
    }
    const refused = new Observable<never>((subscriber) =>
      onUploadRefusal(request, (error) => {
        cutOffAfterAnswer(request, response);
        subscriber.error(error);
      }),
    );
    // Once the file is stored, before the handler: the Idempotency-Key, now that the body is known.
    const claimed: CallHandler = {
      handle: () => from(claimDeferredIdempotency(request, uploadIdentity(request))).pipe(mergeMap(() => next.handle())),
    };
    const handled = from(this.multer.intercept(context, claimed)).pipe(
      mergeAll(),
      catchError((error: unknown) => {
        const stored = request.file;
        const discarded = stored ? this.uploads.discard(request, stored) : Promise.resolve();
        return from(discarded).pipe(mergeMap(() => throwError(() => error)));
      }),
    );
    return race(handled, refused);
  }
}

/** What identifies an upload's body for its Idempotency-Key: the file (digest, size, name) and the form's other fields. */
function uploadIdentity(request: Request & { file?: StoredUpload }): unknown {
  const file = request.file && { sha256: request.file.sha256, bytes: request.file.bytes, fileName: request.file.fileName };
  return { file, fields: { ...(request.body as Record<string, unknown> | undefined) } };
}

/**
 * Ends a refused upload without waiting for its body: the answer goes out at once, the bytes still arriving are
 * read and dropped for at most LINGER_MS, then the connection is cut. Not at once, and not with `Connection:
 * close` (on which Node.js closes the socket as soon as the answer is written): a socket closed while bytes still
 * come in answers them with a TCP reset, and a client that gets the reset before it has read the answer loses the
 * answer (`ECONNRESET` instead of the 413). Nest's runMulter destroys the request as soon as the answer is sent,
 * so its destroy waits too. A client that stops sending meanwhile keeps its connection.
 */
function cutOffAfterAnswer(request: Request, response: Response): void {
  if (request.complete) return;
  const destroy = request.destroy.bind(request);
  request.destroy = (error?: Error) => {
    if (!request.complete) setTimeout(() => destroy(error), LINGER_MS).unref();
    return request;
  };
  response.once('finish', () => {
    const cut = setTimeout(() => request.socket.destroy(), LINGER_MS).unref();
    request.once('end', () => clearTimeout(cut));
  });
}

/**
 * Makes a POST route that takes a JSON body take a file upload too (SourceUploadInterceptor), documented as
 * a second media type of its body, with the form's schema (SourceUploadForm).
 */
export const AcceptsSourceUpload = () =>
  applyDecorators(
    AcceptsMultipartForm(),
    UseInterceptors(SourceUploadInterceptor),
    ApiConsumes('application/json', 'multipart/form-data'),
    ApiExtraModels(SourceUploadForm),
    ApiExtension(MULTIPART_FORM_EXTENSION, { $ref: getSchemaPath(SourceUploadForm) }),
  );

/** What a file source is made of: the stored upload, and the `name` the form gave (undefined: the file's name). */
export interface FileSourceForm {
  upload: StoredUpload;
  name: string | undefined;
}

/**
 * The form of an upload, checked: a `file` part, an optional `name` (validated with the JSON body's rules:
 * `dto`), an optional `type` that can only be `file`, and nothing else (`content` belongs to JSON bodies).
 */
export function fileSourceForm(fields: Record<string, unknown>, dto: CreateSourceDto, upload: StoredUpload | undefined): FileSourceForm {
  const has = (field: string) => Object.prototype.hasOwnProperty.call(fields, field);
  const details = [
    ...(upload ? [] : [{ field: 'file', message: 'file is required: the file to read, as a form part named file' }]),
    ...(has('content') ? [{ field: 'content', message: 'content is not taken with an upload: the file is the content' }] : []),
    ...(has('type') && dto.type !== 'file' ? [{ field: 'type', message: 'type must be file (or left out) for an upload' }] : []),
  ];
  if (details.length) throw new RequestValidationException(details);
  return { upload: upload!, name: has('name') ? dto.name : undefined };
}
