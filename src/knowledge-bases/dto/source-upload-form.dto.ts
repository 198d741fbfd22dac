import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/**
 * The `multipart/form-data` body of a file upload to `POST /knowledge-bases/{kbId}/sources` (documentation only:
 * the form is read by SourceUploadInterceptor, its `name` validated like the JSON body's).
 */
export class SourceUploadForm {
  @ApiProperty({
    type: 'string',
    format: 'binary',
    description:
      'The file: PDF, DOCX, Markdown, plain text (UTF-8, or UTF-16 with its byte order mark), HTML or CSV, at most 20 MiB (`KNOWLEDGE_MAX_FILE_BYTES`). ' +
      'Its type is read from its content (PDF and DOCX by their signatures, HTML by its tags); among text files the extension tells CSV (`.csv`) and Markdown (`.md`) from plain text. ' +
      'Its name is kept as `fileName`: its last path segment, without control characters, at most 255 characters (cut before the extension).',
  })
  file: string;

  @ApiPropertyOptional({
    type: 'string',
    minLength: 1,
    maxLength: 200,
    description: "1–200 characters after trimming; by default the file's name (cut to 200 characters).",
    example: 'Price list',
  })
  name?: string;

  @ApiPropertyOptional({ enum: ['file'], description: 'May be given; only `file`.' })
  type?: 'file';
}
