import { Body, Controller, Delete, Get, Patch, Post } from '@nestjs/common';
import { ApiExtraModels, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { ApiNoBody, refuseBodyFields } from '../common/no-body';
import { Responds } from '../common/responds';
import { CreateToolDto } from './dto/create-tool.dto';
import { ToolCallRequest } from './dto/tool-call-request.dto';
import {
  CreatedTool,
  CreatedToolResponse,
  toCreatedToolResponse,
  ToolResponse,
  ToolSecretResponse,
  toToolResponse,
  toToolSecretResponse,
} from './dto/tool-response.dto';
import { UpdateToolDto } from './dto/update-tool.dto';
import { ToolRow } from './tools.repository';
import { ToolsService } from './tools.service';

const ToolId = () => IntIdParam('toolId', 'Tool');

const REQUEST_DESCRIPTION =
  'A webhook tool\'s call is a `POST` of JSON to its `url`: `{ "id": "tc_…", "tool": "<name>", "arguments": { … }, "conversation": ' +
  '{ "id", "agentId", "channel", "phone", "name" } }` (schema `ToolCallRequest`, the `tool-call` webhook of this document), signed as a webhook delivery is (Standard Webhooks headers ' +
  "`webhook-id`, the body's `id`; `webhook-timestamp`; `webhook-signature`, with the tool's secret). A 2xx answer's body (JSON or text, at " +
  'most 16 KiB) is what the model sees; a timeout, another status, a redirect, a refused connection or a larger body gives the model ' +
  '`{"error": "<what went wrong>"}`. Arguments that do not match `parameters` are not sent: the model is told why instead.';

@ApiTags('tools')
@ApiExtraModels(ToolCallRequest)
@Controller('tools')
export class ToolsController {
  constructor(private readonly tools: ToolsService) {}

  @Get()
  @ApiOperation({ summary: "List the account's tools, by id (never their secrets)" })
  @Responds([ToolResponse], toToolResponse)
  list(@CurrentAccount() account: CallerAccount): Promise<ToolRow[]> {
    return this.tools.list(account.id);
  }

  @Post()
  @ApiOperation({
    summary: "Create a tool; a webhook tool's answer carries its signing secret, shown this once",
    description: REQUEST_DESCRIPTION,
  })
  @Responds(CreatedToolResponse, toCreatedToolResponse, { status: 201 })
  @ApiErrors(
    [
      400,
      'Invalid field (a name that is not 1–64 letters, digits, `_` or `-`; `parameters` that is not an object JSON Schema of at most 16 KiB; ' +
        'a URL that is not https, has credentials or points at a private address; a field the type does not take, or a required one missing)',
    ],
    [409, 'The account already has a tool of that name'],
    413,
    415,
  )
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateToolDto): Promise<CreatedTool> {
    return this.tools.create(account.id, dto);
  }

  @Get(':toolId')
  @ApiOperation({ summary: 'Get one tool' })
  @Responds(ToolResponse, toToolResponse)
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @ToolId() toolId: number): Promise<ToolRow> {
    return this.tools.get(account.id, toolId);
  }

  @Patch(':toolId')
  @ApiOperation({ summary: "Change some of a tool's fields (those of its type; the type itself cannot change)" })
  @Responds(ToolResponse, toToolResponse)
  @ApiErrors(400, 404, [409, 'The account already has a tool of that name'], 413, 415)
  update(@CurrentAccount() account: CallerAccount, @ToolId() toolId: number, @Body() dto: UpdateToolDto): Promise<ToolRow> {
    return this.tools.update(account.id, toolId, dto);
  }

  @Delete(':toolId')
  @NoContent()
  @ApiOperation({ summary: 'Delete a tool; every agent that had it loses it' })
  @ApiErrors(404)
  async remove(@CurrentAccount() account: CallerAccount, @ToolId() toolId: number): Promise<void> {
    await this.tools.remove(account.id, toolId);
  }

  @Post(':toolId/rotate-secret')
  @ApiOperation({
    summary:
      "Replace a webhook tool's signing secret; for 24 hours its requests carry signatures made with the new and the previous secret",
  })
  @Responds(ToolSecretResponse, toToolSecretResponse)
  @ApiErrors(404, [409, 'Not a webhook tool: it sends no requests, so it has no secret'])
  @ApiNoBody()
  async rotateSecret(@CurrentAccount() account: CallerAccount, @ToolId() toolId: number, @Body() body: unknown): Promise<string> {
    refuseBodyFields(body);
    return this.tools.rotateSecret(account.id, toolId);
  }
}
