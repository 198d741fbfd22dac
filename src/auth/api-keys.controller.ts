import { Body, Controller, Delete, Get, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { Responds } from '../common/responds';
import { ApiKeysService, CreatedApiKey } from './api-keys.service';
import type { ApiKeyRow } from './auth.repository';
import { CallerAccount } from './caller-account';
import { CurrentAccount } from './current-account.decorator';
import { ApiKeyResponse, CreatedApiKeyResponse, toApiKeyResponse, toCreatedApiKeyResponse } from './dto/api-key-response.dto';
import { CreateApiKeyDto } from './dto/create-api-key.dto';
import { RequiresScope } from './scope.guard';

// eslint-disable-next-line no-useless-assignment -- read by the parameter decorator below, which the rule does not see (eslint/eslint#20947)
const KeyId = () => IntIdParam('keyId', 'API key');

/** The account's API keys (contract section 13). Managing keys needs the `write` scope, listing them included. */
@ApiTags('api keys')
@Controller('api-keys')
@RequiresScope('write')
export class ApiKeysController {
  constructor(private readonly keys: ApiKeysService) {}

  @Get()
  @ApiOperation({ summary: "List the account's API keys, by id, revoked and expired ones included (never the keys themselves)" })
  @Responds([ApiKeyResponse], toApiKeyResponse)
  list(@CurrentAccount() account: CallerAccount): Promise<ApiKeyRow[]> {
    return this.keys.list(account.id);
  }

  @Post()
  @ApiOperation({
    summary: 'Create an API key; the answer holds the key itself, shown this once',
    description: 'The new key may have no scope that the key of the request lacks, and may not outlive it (403 otherwise).',
  })
  @Responds(CreatedApiKeyResponse, toCreatedApiKeyResponse, { status: 201 })
  @ApiErrors(
    400,
    [403, 'A scope the key of the request does not have, or an expiry later than its own (or none, when it expires)'],
    413,
    415,
  )
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateApiKeyDto): Promise<CreatedApiKey> {
    return this.keys.createFor(account, { name: dto.name, scopes: dto.scopes, expiresAt: dto.expiresAt });
  }

  @Delete(':keyId')
  @NoContent('Revoked, on every instance at once (again: 204, the first revocation time kept)')
  @ApiOperation({ summary: 'Revoke an API key at once (the key of the request itself too)' })
  @ApiErrors(404)
  async revoke(@CurrentAccount() account: CallerAccount, @KeyId() keyId: number): Promise<void> {
    await this.keys.revoke(account.id, keyId);
  }
}
