import { ApiProperty } from '@nestjs/swagger';
import { ApiDateTime } from '../../common/api-formats';
import type { CreatedApiKey } from '../api-keys.service';
import type { ApiKeyRow } from '../auth.repository';
import { API_KEY_SCOPES, type ApiKeyScope } from '../scopes';

/** An API key as listed: never the key itself, nor its hash. */
export class ApiKeyResponse {
  /** @example 7 */
  @ApiProperty({ type: 'integer' })
  id: number;
  /** @example "Reporting (read only)" */
  name: string;
  /** The key's first characters, to tell keys apart. @example "vak_3q2-7wVh" */
  prefix: string;
  /** @example ["read"] */
  @ApiProperty({ enum: API_KEY_SCOPES, isArray: true })
  scopes: ApiKeyScope[];
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
  /** When the key was last used (recorded at most once a minute, so up to a minute behind); null if never. @example "2026-11-23T08:41:10.519Z" */
  @ApiDateTime({ nullable: true })
  lastUsedAt: string | null;
  /** When the key stops working; null if never. @example "2027-06-30T23:59:59.000Z" */
  @ApiDateTime({ nullable: true })
  expiresAt: string | null;
  /** When the key was revoked; null while it is not. @example null */
  @ApiDateTime({ nullable: true })
  revokedAt: string | null;
}

/** A new key: the same fields, plus the key itself, shown this once (store it now). */
export class CreatedApiKeyResponse extends ApiKeyResponse {
  /** The key to send as `X-Api-Key`; not shown again. @example "vak_3q2-7wVhZ0kq9yXb1mT4cR8sLdE6uJfA" */
  apiKey: string;
}

export function toApiKeyResponse(key: ApiKeyRow): ApiKeyResponse {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    revokedAt: key.revokedAt?.toISOString() ?? null,
  };
}

export function toCreatedApiKeyResponse({ key, apiKey }: CreatedApiKey): CreatedApiKeyResponse {
  return { ...toApiKeyResponse(key), apiKey };
}
