import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ErrorResponse } from './common/error-response.dto';
import pluginMetadata from './metadata';
import { AppModule } from './app.module';
import { AppConfig } from './config/config';
import { CONVERSATION_TOKEN_SCHEME } from './conversations/conversations.controller';

export const API_VERSION = '1.0.0';
export const API_KEY_SCHEME = 'api-key';

const DESCRIPTION = `REST API of the voice-agent platform: agents, knowledge bases, call history with recordings and
website widget sites. Every request carries an API key in the \`X-Api-Key\` header; a key only ever sees its own
account, and another account's resource is always a 404. Errors have one shape: \`{statusCode, error, message}\`,
plus \`details\` for validation failures. Lists are plain JSON arrays.`;

/** Sorts object keys recursively, so that the committed document diffs cleanly. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

/** @Public() marks an operation with an empty security requirement (`{}`): it needs no API key. */
const isPublicOperation = (security: unknown) => Array.isArray(security) && security.some((requirement: object) => Object.keys(requirement).length === 0);

const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } };

/**
 * The responses every operation can give, documented once here rather than on each route: 401 and 429 (the
 * per-key rate limit) on every operation that needs a key, and 503 when the database is unavailable. Public
 * operations (marked `security: [{}]` by @Public()) are shown as needing no key.
 */
function documentCommonResponses(document: OpenAPIObject): void {
  for (const pathItem of Object.values(document.paths)) {
    for (const operation of Object.values(pathItem)) {
      if (!operation || typeof operation !== 'object' || !('responses' in operation)) continue;
      const responses = operation.responses;
      if (isPublicOperation(operation.security)) {
        // What is left is its own credential (a conversation's bearer token), if any.
        operation.security = operation.security!.filter((requirement: object) => Object.keys(requirement).length > 0);
      } else {
        responses['401'] ??= { description: 'Missing, unknown or revoked API key', content: errorContent };
        responses['429'] ??= { description: 'Over the rate limit of this API key; see `Retry-After`', content: errorContent };
      }
      responses['503'] ??= { description: 'The database (or recording storage) is unavailable; try again shortly', content: errorContent };
    }
  }
}

export async function buildOpenApiDocument(app: INestApplication): Promise<OpenAPIObject> {
  await SwaggerModule.loadPluginMetadata(pluginMetadata);
  const config = new DocumentBuilder()
    .setTitle('Voice Agent API')
    .setDescription(DESCRIPTION)
    .setVersion(API_VERSION)
    .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Api-Key' }, API_KEY_SCHEME)
    .addSecurityRequirements(API_KEY_SCHEME)
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'opaque (vac_…)', description: 'The `token` a conversation was started with (routes under /conversations/{conversationId})' },
      CONVERSATION_TOKEN_SCHEME,
    )
    .build();
  const document = SwaggerModule.createDocument(app, config, { extraModels: [ErrorResponse] });
  documentCommonResponses(document);
  return sortKeys(document) as OpenAPIObject;
}

/** Swagger UI at /docs and the document at /openapi.json, both public. */
export function serveOpenApiDocument(app: INestApplication, document: OpenAPIObject): void {
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', raw: ['json'] });
}

/**
 * The document without a database: the module graph is built in preview mode (nothing is instantiated).
 * `npm run openapi` writes it to openapi.json; a test fails when that file is stale.
 */
export async function generateOpenApiDocument(config: AppConfig): Promise<OpenAPIObject> {
  const app = await NestFactory.create(AppModule.forRoot(config, 'postgres://preview'), { preview: true, logger: false });
  try {
    return await buildOpenApiDocument(app);
  } finally {
    await app.close();
  }
}

export const stringifyOpenApiDocument = (document: OpenAPIObject) => `${JSON.stringify(document, null, 2)}\n`;
