import { INestApplication, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DocumentBuilder, getSchemaPath, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { JSON_BODY_ERRORS } from './common/api-errors.decorator';
import { ErrorResponse } from './common/error-response.dto';
import pluginMetadata from './metadata';
import { AppModule } from './app.module';
import { AppConfig } from './config/config';
import { WEBHOOK_EVENT_SCHEMAS } from './webhooks/dto/webhook-event-payload.dto';
import { CONVERSATION_TOKEN_SCHEME } from './conversations/conversations.controller';
import { MULTIPART_FORM_EXTENSION } from './knowledge-bases/source-upload';
import { messageUnionSchema } from './common/message-unions';
import { upgradeSchemasTo31 } from './openapi-31';
import { TWILIO_STREAM_FROM_CARRIER, TWILIO_STREAM_TO_CARRIER } from './telephony/dto/media-stream-messages.dto';
import { ToolCallRequest } from './tools/dto/tool-call-request.dto';
import { VOICE_CLIENT_MESSAGES, VOICE_SERVER_MESSAGES } from './voice/dto/voice-socket-messages.dto';

export const API_VERSION = '1.0.0';
export const API_KEY_SCHEME = 'api-key';

const DESCRIPTION = `REST API of the voice-agent platform: agents, knowledge bases, call history with recordings,
website widget sites and webhooks. Every request carries an API key in the \`X-Api-Key\` header; a key only ever sees its own
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
const isPublicOperation = (security: unknown) =>
  Array.isArray(security) && security.some((requirement: object) => Object.keys(requirement).length === 0);

const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } };

type Responses = Record<string, { description?: string; headers?: Record<string, unknown>; content?: unknown }>;
interface RequestBody {
  required?: boolean;
  content?: Record<string, { schema?: { $ref?: string; required?: string[] } }>;
}
interface Operation {
  security?: unknown;
  parameters?: unknown[];
  requestBody?: RequestBody;
  responses: Responses;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every operation of the document, with its method. */
function operationsOf(document: OpenAPIObject): { method: string; operation: Operation }[] {
  return Object.values(document.paths).flatMap((pathItem) =>
    Object.entries(pathItem)
      .filter(([method, operation]) => METHODS.includes(method) && operation && typeof operation === 'object' && 'responses' in operation)
      .map(([method, operation]) => ({ method, operation: operation as Operation })),
  );
}

/** The headers documented once, under components.headers, and referred to by the responses. */
const HEADERS = {
  RateLimit: {
    description:
      "The account's budget after this request (the address's, for a request without a valid key): `limit=<requests per window>, remaining=<n>, reset=<seconds until it is whole again>`. Absent when `RATE_LIMIT=0`.",
    schema: { type: 'string', example: 'limit=600, remaining=599, reset=60' },
  },
  'RateLimit-Policy': {
    description: 'The limit and its window in seconds: `<limit>;w=<window>`. Absent when `RATE_LIMIT=0`.',
    schema: { type: 'string', example: '600;w=60' },
  },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', example: 42 } },
  'Idempotent-Replayed': {
    description: '`true` when this is the stored answer of an earlier request with the same `Idempotency-Key` (nothing was done again).',
    schema: { type: 'string', enum: ['true'] },
  },
};
const header = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });

/** The Idempotency-Key parameter, documented once under components.parameters. */
const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes the POST safe to retry: 1–255 printable ASCII characters (a UUID, say), per account. The same key from the same API key with the same method, path and body within 24 hours ' +
    'gets the first answer again (status and body, with `Idempotent-Replayed: true`) and does nothing again; with another request, 422; while the first is still running, 409. ' +
    'Answers 5xx and 429 are not kept: the key may be retried.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$', example: '5f0c6d9e-2f7a-4c1e-9a51-0d6f3b8e2a47' },
};

/** Adds `text` to an existing response's description, or documents the response with it. */
function documentError(responses: Responses, status: string, text: string): void {
  const existing = responses[status];
  if (!existing) responses[status] = { description: text, content: errorContent };
  else if (!existing.description?.includes(text))
    existing.description = existing.description ? `${existing.description}; or: ${text}` : text;
}

const SCOPE_403 = 'The API key does not have the scope this needs (`read` for GET, `write` for the others)';

/**
 * What every operation can answer, documented once here rather than on each route. On every operation that
 * needs a key: 401 and 429 (the per-account rate limit, with `Retry-After`), 403 (the key's scope), and the
 * rate-limit headers on every response; on its POSTs, the `Idempotency-Key` header with its 409 and 422 and the
 * `Idempotent-Replayed` header of a replay. On every operation, 503 when the database is unavailable. Public
 * operations (marked `security: [{}]` by @Public()) are shown as needing no key.
 */
function documentCommonResponses(document: OpenAPIObject): void {
  document.components ??= {};
  Object.assign((document.components.headers ??= {}), HEADERS);
  (document.components.parameters ??= {})['Idempotency-Key'] = IDEMPOTENCY_KEY_PARAMETER as never;
  for (const { method, operation } of operationsOf(document)) {
    const responses = operation.responses;
    if (isPublicOperation(operation.security)) {
      // What is left is its own credential (a conversation's bearer token), if any.
      operation.security = (operation.security as object[]).filter((requirement) => Object.keys(requirement).length > 0);
    } else {
      responses['401'] ??= { description: 'Missing, unknown, revoked or expired API key', content: errorContent };
      responses['429'] ??= {
        description:
          'Over the rate limit of this account (all its keys together), or too many requests without a valid key from this address; see `Retry-After`',
        content: errorContent,
      };
      responses['429'].headers = { ...responses['429'].headers, 'Retry-After': header('Retry-After') };
      if (!responses['403']?.description?.includes('scope')) documentError(responses, '403', SCOPE_403); // @RequiresScope documents its own
      if (method === 'post') documentIdempotency(operation);
      for (const response of Object.values(responses))
        response.headers = { ...response.headers, RateLimit: header('RateLimit'), 'RateLimit-Policy': header('RateLimit-Policy') };
    }
    responses['503'] ??= { description: 'The database (or recording storage) is unavailable; try again shortly', content: errorContent };
  }
}

/**
 * Every JSON body (JsonBodyGuard reads one on each POST, PUT and PATCH but the recording upload): its 400,
 * 413 and 415 (JSON_BODY_ERRORS). An absent body is read as `{}`, so a body is required only where its schema
 * requires a field.
 */
function documentJsonBodies(document: OpenAPIObject): void {
  const schemas = (document.components?.schemas ?? {}) as Record<string, { required?: string[] }>;
  for (const { method, operation } of operationsOf(document)) {
    const json = operation.requestBody?.content?.['application/json'];
    if (!['post', 'put', 'patch'].includes(method) || !json) continue;
    for (const status of [400, 413, 415]) documentError(operation.responses, String(status), JSON_BODY_ERRORS[status]);
    const schema = json.schema?.$ref ? schemas[json.schema.$ref.replace('#/components/schemas/', '')] : json.schema;
    operation.requestBody!.required = (schema?.required?.length ?? 0) > 0;
  }
}

/**
 * Swagger gives every media type of a request body the same schema; an operation that takes JSON or a
 * multipart upload (a knowledge-base file) names its form's schema in MULTIPART_FORM_EXTENSION instead
 * (`@ApiMultipartForm`), which becomes the body's `multipart/form-data` content here.
 */
function documentMultipartForms(document: OpenAPIObject): void {
  for (const { operation } of operationsOf(document)) {
    const extended = operation as Operation & { [MULTIPART_FORM_EXTENSION]?: { $ref: string } };
    const form = extended[MULTIPART_FORM_EXTENSION];
    if (!form) continue;
    delete extended[MULTIPART_FORM_EXTENSION];
    ((extended.requestBody ??= {}).content ??= {})['multipart/form-data'] = { schema: form };
  }
}

/** The Idempotency-Key of a POST that needs a key: the parameter, its errors, and the header of a replay. */
function documentIdempotency(operation: Operation): void {
  const { responses } = operation;
  (operation.parameters ??= []).push({ $ref: '#/components/parameters/Idempotency-Key' });
  documentError(responses, '400', 'An `Idempotency-Key` that is not 1–255 printable ASCII characters');
  documentError(responses, '409', 'A request with this `Idempotency-Key` is still in progress');
  documentError(
    responses,
    '422',
    'This `Idempotency-Key` was used with another request (API key, method, path or body) in the last 24 hours',
  );
  for (const [status, response] of Object.entries(responses)) {
    if (status.startsWith('2')) response.headers = { ...response.headers, 'Idempotent-Replayed': header('Idempotent-Replayed') };
  }
}

/** The Standard Webhooks headers of every request the service sends to a customer's URL (webhooks and tools alike). */
const SIGNATURE_HEADERS = (id: string) => ({
  'webhook-id': { description: id, schema: { type: 'string' } },
  'webhook-timestamp': {
    description: 'When this attempt was made, in seconds since the Unix epoch: refuse one more than a few minutes old.',
    schema: { type: 'string', pattern: '^[0-9]+$', example: '1795338902' },
  },
  'webhook-signature': {
    description:
      '`v1,<base64 HMAC-SHA256 of id.timestamp.body>` with each active secret, space-separated (two for 24 hours after a rotation). Verify with any Standard Webhooks library.',
    schema: { type: 'string', example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' },
  },
});

/** A request the service sends: a signed JSON `POST` of `schema`, answered as `responses` say. */
const signedPost = (summary: string, description: string, schema: Type<unknown>, id: string, responses: object) => ({
  post: {
    summary,
    description,
    parameters: Object.entries(SIGNATURE_HEADERS(id)).map(([name, header]) => ({ name, in: 'header', required: true, ...header })),
    requestBody: { required: true, content: { 'application/json': { schema: { $ref: getSchemaPath(schema) } } } },
    responses,
  },
});

/** The name of the tool call request in `webhooks` (the others are the event types). */
export const TOOL_CALL_WEBHOOK = 'tool-call';

/**
 * The requests the service sends to its customers' URLs, as OpenAPI 3.1's `webhooks`: one per webhook event type
 * (the body's `type`), and the call of a webhook tool. A generator makes types of them (the typed client's
 * `WebhookPayload<'call.created'>`).
 */
function documentWebhooks(document: OpenAPIObject): void {
  const eventId = "The event id (the body's `id`), the same on every attempt: deduplicate on it.";
  document.webhooks = {
    ...Object.fromEntries(
      Object.entries(WEBHOOK_EVENT_SCHEMAS).map(([type, schema]) => [
        type,
        signedPost(
          `The \`${type}\` event`,
          `POSTed to each enabled webhook subscribed to it (\`ping\`: by \`POST /webhooks/{webhookId}/test\`).`,
          schema,
          eventId,
          {
            '2XX': {
              description: 'Received. Anything else (or no answer within WEBHOOK_TIMEOUT_MS) is retried; 410 disables the webhook.',
            },
          },
        ),
      ]),
    ),
    [TOOL_CALL_WEBHOOK]: signedPost(
      'A webhook tool called by the model',
      `POSTed to the tool's \`url\` when the agent's model calls it in a conversation (\`POST /tools\`), signed with the tool's secret.`,
      ToolCallRequest,
      "The tool call's id (the body's `id`).",
      {
        '2XX': {
          description: 'The result the model sees: the body, JSON or text, at most 16 KiB.',
          content: { 'application/json': { schema: {} }, 'text/plain': { schema: { type: 'string' } } },
        },
        default: {
          description:
            'Any other status, a redirect, no answer within the tool\'s `timeoutSeconds` or a body over 16 KiB: the model is told `{"error": "<what went wrong>"}`, and the conversation goes on.',
        },
      },
    ),
  } as OpenAPIObject['webhooks'];
}

/** The messages of the sockets (the voice socket's, the carrier's media stream's): each a schema, and each side's union. */
const MESSAGE_UNIONS = [VOICE_CLIENT_MESSAGES, VOICE_SERVER_MESSAGES, TWILIO_STREAM_FROM_CARRIER, TWILIO_STREAM_TO_CARRIER];

function documentMessageUnions(document: OpenAPIObject): void {
  const schemas = ((document.components ??= {}).schemas ??= {});
  for (const union of MESSAGE_UNIONS) schemas[union.name] = messageUnionSchema(union);
}

/** The document of an application's routes, its webhooks and its sockets' messages: the same for every application of this code. */
export async function buildOpenApiDocument(app: INestApplication): Promise<OpenAPIObject> {
  await SwaggerModule.loadPluginMetadata(pluginMetadata);
  return openApiDocument(app);
}

/** buildOpenApiDocument's work, once the DTOs' metadata is loaded: synchronous, about 0.3 s of CPU. */
function openApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Voice Agent API')
    .setDescription(DESCRIPTION)
    .setVersion(API_VERSION)
    .setOpenAPIVersion('3.1.0')
    .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Api-Key' }, API_KEY_SCHEME)
    .addSecurityRequirements(API_KEY_SCHEME)
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'opaque (vac_…)',
        description: 'The `token` a conversation was started with (routes under /conversations/{conversationId})',
      },
      CONVERSATION_TOKEN_SCHEME,
    )
    .build();
  const extraModels = [
    ErrorResponse,
    ...Object.values(WEBHOOK_EVENT_SCHEMAS),
    ToolCallRequest,
    ...MESSAGE_UNIONS.flatMap((union) => Object.values(union.members)),
  ];
  const document = SwaggerModule.createDocument(app, config, { extraModels });
  documentJsonBodies(document);
  documentMultipartForms(document);
  documentCommonResponses(document);
  documentWebhooks(document);
  documentMessageUnions(document);
  upgradeSchemasTo31(document);
  return sortKeys(document) as OpenAPIObject;
}

/**
 * Swagger UI at /docs and the document at /openapi.json, both public. The document is built `atStartup` (a service:
 * its 0.3 s of CPU must not hold the event loop of calls under way) or at the first request for it (the tests' hundreds
 * of applications, most of which never ask).
 */
export async function serveOpenApiDocument(app: INestApplication, { atStartup }: { atStartup: boolean }): Promise<void> {
  await SwaggerModule.loadPluginMetadata(pluginMetadata);
  const build = () => openApiDocument(app);
  SwaggerModule.setup('docs', app, atStartup ? build() : build, { jsonDocumentUrl: 'openapi.json', raw: ['json'] });
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
