import { Body, Controller, Delete, Get, Logger, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { UuidPipe } from '../common/id.pipes';
import { Responds, WritesOwnResponse } from '../common/responds';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { AccountExportRunningException, exportFileName, ExportFormatter, exportWriter } from './calls-export';
import { CallsService, ExportsBusyException } from './calls.service';
import { CallRow } from './calls.repository';
import { CallDetail, CallListItemResponse, CallResponse, toCallListItemResponse, toCallResponse } from './dto/call-response.dto';
import { CreateCallDto } from './dto/create-call.dto';
import { ExportCallsQuery, ListCallsQuery } from './dto/list-calls-query.dto';

const CallId = () => Param('callId', new UuidPipe('Call'));
const CALL_ID_PARAM = { name: 'callId', format: 'uuid', description: 'Anything that is not a UUID is a 404, like an unknown id' };

/**
 * The next page's address: this request's own parameters, normalised (validated values, defaults left out,
 * unknown parameters dropped, a fixed order), with the cursor. Absolute, from PUBLIC_BASE_URL.
 */
export function nextPageUrl(publicBaseUrl: string, query: ListCallsQuery, cursor: string): string {
  const params = new URLSearchParams({ limit: String(query.limit) });
  for (const name of ['search', 'status', 'callStatus'] as const) if (query[name]) params.set(name, query[name]);
  if (query.agentId !== undefined) params.set('agentId', String(query.agentId));
  if (query.days) params.set('days', String(query.days));
  params.set('before', cursor);
  return `${publicBaseUrl}/calls?${params.toString()}`;
}

@ApiTags('calls')
@Controller('calls')
export class CallsController {
  private readonly logger = new Logger(CallsController.name);

  constructor(
    private readonly calls: CallsService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'List calls, newest first (callDate, then id, descending); never test calls, never transcript or credits',
    description:
      'The filters combine. Unknown query parameters are ignored; a bad value of a known one is a 400. A full page (as many ' +
      'calls as `limit`) comes with a `Link: <…/calls?…&before=…>; rel="next"` header: the same filters and the cursor of ' +
      "the page's last call. Following it gives the next older calls, none repeated or skipped while calls arrive; the " +
      'last page is the first that is not full (it has no Link).',
  })
  @Responds([CallListItemResponse], toCallListItemResponse, {
    headers: { Link: { description: 'On a full page: `<absolute URL of the next page>; rel="next"`', schema: { type: 'string' } } },
  })
  @ApiErrors([400, 'Bad query parameter value or malformed cursor (with `details`)'])
  async list(
    @CurrentAccount() account: CallerAccount,
    @Query() query: ListCallsQuery,
    @Res({ passthrough: true }) response: Response,
  ): Promise<CallRow[]> {
    const page = await this.calls.list(account.id, query);
    if (page.next) response.setHeader('Link', `<${nextPageUrl(this.config.publicBaseUrl, query, page.next)}>; rel="next"`);
    return page.calls;
  }

  @Post()
  @ApiOperation({ summary: 'Record a call (voice runtime, widget, tests); returns the full call' })
  @Responds(CallResponse, toCallResponse, { status: 201 })
  @ApiErrors(400, 413, 415)
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateCallDto): Promise<CallDetail> {
    return this.calls.create(account.id, dto);
  }

  // Before `:callId`, so that the route is not taken for a call id.
  @Get('export')
  @ApiOperation({
    summary: 'Export every call the filters match, newest first, as CSV or NDJSON',
    description:
      'The filters of `GET /calls`, without a row limit: streamed from the database as it is sent (memory stays flat ' +
      "whatever the count). CSV: RFC 4180, UTF-8, a header row of the list item's field names in the list's order, " +
      '`feedback` and `extractedData` as JSON text, `agentId` empty when null, and a cell that begins with `=`, `+`, `-`, ' +
      "`@`, a tab or a carriage return prefixed with `'` (spreadsheet formula injection). NDJSON: one list item per line. " +
      'A failure after the first bytes cuts the connection (the file is then visibly incomplete), and so does an export ' +
      'still running after `EXPORT_MAX_SECONDS` (600 by default: export a long history in parts, by `days`). One export ' +
      'at a time per account: another, while one runs, is a 429 with `Retry-After`.',
  })
  @WritesOwnResponse()
  @ApiOkResponse({
    description: 'The file, as an attachment named `calls-<YYYY-MM-DD>.csv` (or `.ndjson`)',
    // Only the file is CSV or NDJSON: the errors are JSON in the error shape, as everywhere.
    content: { 'text/csv': { schema: { type: 'string' } }, 'application/x-ndjson': { schema: { type: 'string' } } },
    headers: { 'Content-Disposition': { description: '`attachment; filename="calls-2026-11-22.csv"`', schema: { type: 'string' } } },
  })
  @ApiErrors(
    400,
    [
      429,
      'Another export of this account is running (one at a time per account), or over the rate limit of this account; see `Retry-After`',
    ],
    [503, 'The database is unavailable, or too many exports are running (with `Retry-After`)'],
  )
  async export(
    @CurrentAccount() account: CallerAccount,
    @Query() query: ExportCallsQuery,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const writer = exportWriter(query.format);
    const headers = {
      'Content-Type': writer.contentType,
      'Content-Disposition': `attachment; filename="${exportFileName(query.format)}"`,
      'Cache-Control': 'no-store',
    };
    if (request.method === 'HEAD') {
      response.status(200).set(headers).end();
      return;
    }
    // Errors until the first rows are in (a bad query, the database down) are still answered in the error shape.
    const batches = await this.calls.streamAll(account.id, query).catch((error: unknown) => {
      if (error instanceof ExportsBusyException || error instanceof AccountExportRunningException) {
        response.setHeader('Retry-After', String(error.retryAfterSeconds));
      }
      throw error;
    });
    response.status(200).set(headers);
    // A bound on the whole export: a client that reads slowly (or not at all) cannot keep its connection, its
    // snapshot and the account's one export for as long as it likes. Past it, the transfer is cut (already a 200).
    const deadline = AbortSignal.timeout(this.config.exportMaxSeconds * 1000);
    try {
      await pipeline(batches, new ExportFormatter(writer), response, { signal: deadline });
    } catch (error) {
      // pipeline has destroyed every stage: the cursor is closed and its connection given back (or discarded).
      // A client that went away (a premature close) is no failure; anything else cut the file short, which the
      // client sees as a broken transfer. Logged by name and code only: a database error can quote values.
      const { name, code } = error as { name?: unknown; code?: unknown };
      if (deadline.aborted) this.logger.warn(`Export cut after EXPORT_MAX_SECONDS (${this.config.exportMaxSeconds} s)`);
      else if (code !== 'ERR_STREAM_PREMATURE_CLOSE') this.logger.warn({ err: { name, code } }, 'Export failed mid-stream');
    }
  }

  @Get(':callId')
  @ApiOperation({ summary: 'Get one call with its transcript and the credits it used (test calls included)' })
  @Responds(CallResponse, toCallResponse)
  @ApiParam(CALL_ID_PARAM)
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @CallId() callId: string): Promise<CallDetail> {
    return this.calls.getDetail(account.id, callId);
  }

  @Delete(':callId')
  @NoContent('Erased: the call, its transcript and its recording')
  @ApiOperation({
    summary: 'Erase a call: its recording, its transcript, the conversation it was (if any) and the call itself',
    description:
      "The recording's stored object is deleted first, then the call. When recording storage is unreachable the answer " +
      'is 503 and nothing is deleted (retry later). Erasing an erased call is a 404.',
  })
  @ApiParam(CALL_ID_PARAM)
  @ApiErrors(404, [503, 'Recording storage (or the database) is unavailable; nothing was deleted'])
  async erase(@CurrentAccount() account: CallerAccount, @CallId() callId: string): Promise<void> {
    await this.calls.erase(account.id, callId);
  }
}
