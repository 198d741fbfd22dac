import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { SwaggerModule } from '@nestjs/swagger';
import { loadConfig } from '../src/config/config';
import { generateOpenApiDocument, stringifyOpenApiDocument, TOOL_CALL_WEBHOOK } from '../src/openapi';
import { WEBHOOK_EVENT_SCHEMAS } from '../src/webhooks/dto/webhook-event-payload.dto';
import { createTestContext } from './helpers';

const STALE = 'is stale: run `npm run openapi` and commit openapi.json and src/metadata.ts';

describe('OpenAPI document', () => {
  it(`src/metadata.ts matches the source (else it ${STALE})`, async () => {
    // In its own process: the generator comes from @nestjs/cli, whose ES-module dependencies Jest cannot load.
    const check = promisify(execFile)(process.execPath, ['-r', './scripts/register.js', 'scripts/openapi-metadata.ts', '--check'], {
      cwd: path.join(__dirname, '..'),
    });
    await expect(check).resolves.toBeDefined();
  }, 60_000);

  it(`the committed openapi.json matches the application (else it ${STALE})`, async () => {
    const document = await generateOpenApiDocument(loadConfig({}));
    const committed = fs.readFileSync(path.join(__dirname, '..', 'openapi.json'), 'utf8');
    expect(committed).toBe(stringifyOpenApiDocument(document));
  });

  /** `scripts/validate-openapi.ts` on `file` (@apidevtools/swagger-parser, in a process of its own: its modules are ES ones). */
  const validate = (file?: string) =>
    promisify(execFile)(process.execPath, ['-r', './scripts/register.js', 'scripts/validate-openapi.ts', ...(file ? [file] : [])], {
      cwd: path.join(__dirname, '..'),
    });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test reads the document as JSON
  const committed = (): any => JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'openapi.json'), 'utf8'));

  it('is a valid OpenAPI 3.1 document (@apidevtools/swagger-parser), with every request the service sends under webhooks', async () => {
    expect((await validate()).stdout).toBe('openapi.json: a valid OpenAPI 3.1.0 document\n');
    const document = committed();
    expect(Object.keys(document.webhooks ?? {}).sort()).toEqual([...Object.keys(WEBHOOK_EVENT_SCHEMAS), TOOL_CALL_WEBHOOK].sort());
    expect(JSON.stringify(document)).not.toContain('"nullable"'); // 3.0's, gone: a null type instead
    // The sockets' messages, each way, as unions the socket routes point at.
    expect(document.paths['/conversations/{conversationId}/voice'].get['x-messages']).toEqual({
      receives: { $ref: '#/components/schemas/VoiceClientMessage' },
      sends: { $ref: '#/components/schemas/VoiceServerMessage' },
    });
    expect(document.paths['/telephony/twilio/stream'].get['x-messages']).toEqual({
      receives: { $ref: '#/components/schemas/TwilioStreamFromCarrier' },
      sends: { $ref: '#/components/schemas/TwilioStreamToCarrier' },
    });
    const fromCarrier = document.components.schemas.TwilioStreamFromCarrier as { discriminator: { mapping: object } };
    expect(Object.keys(fromCarrier.discriminator.mapping).sort()).toEqual(['connected', 'dtmf', 'mark', 'media', 'start', 'stop']);
  }, 60_000);

  it('fails validation for a document with a broken reference, or a 3.0 keyword (the validation is not vacuous)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-'));
    try {
      const broken = committed();
      broken.components.schemas.VoiceClientMessage = { oneOf: [{ $ref: '#/components/schemas/NoSuchMessage' }] };
      fs.writeFileSync(path.join(dir, 'broken.json'), JSON.stringify(broken));
      await expect(validate(path.join(dir, 'broken.json'))).rejects.toMatchObject({ stderr: expect.stringMatching(/NoSuchMessage/) });
      const old = committed();
      old.paths['/agents'].get.responses['200'] = { description: 'ok', content: 'not a map' };
      fs.writeFileSync(path.join(dir, 'old.json'), JSON.stringify(old));
      await expect(validate(path.join(dir, 'old.json'))).rejects.toMatchObject({ code: 1 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('describes the API-key scheme, required everywhere but on public routes', async () => {
    const document = await generateOpenApiDocument(loadConfig({}));
    expect(document.components?.securitySchemes?.['api-key']).toEqual({ in: 'header', name: 'X-Api-Key', type: 'apiKey' });
    expect(document.security).toEqual([{ 'api-key': [] }]);
    expect(document.paths['/health'].get?.security).toEqual([]);
    expect(document.paths['/agents'].get?.responses['401']).toBeDefined();
  });

  it('documents on every operation with a key its rate-limit headers and 403, and on every such POST the Idempotency-Key', async () => {
    const document = await generateOpenApiDocument(loadConfig({}));
    const missing: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item) as [
        string,
        { security?: unknown[]; parameters?: { $ref?: string }[]; responses: Record<string, { headers?: object }> },
      ][]) {
        // Public, or with a credential of its own (a conversation's bearer token): no key, no account budget.
        if (operation.security && !operation.security.some((requirement) => 'api-key' in (requirement as object))) continue;
        const where = `${method.toUpperCase()} ${path}`;
        for (const [status, response] of Object.entries(operation.responses)) {
          if (status !== '503' && !(response.headers && 'RateLimit' in response.headers && 'RateLimit-Policy' in response.headers))
            missing.push(`${where} ${status}: rate-limit headers`);
        }
        if (!operation.responses['403']) missing.push(`${where}: 403`);
        if (method !== 'post') continue;
        if (!operation.parameters?.some((parameter) => parameter.$ref === '#/components/parameters/Idempotency-Key'))
          missing.push(`${where}: Idempotency-Key`);
        for (const status of ['409', '422']) if (!operation.responses[status]) missing.push(`${where}: ${status}`);
      }
    }
    expect(missing).toEqual([]);
    expect(document.paths['/agents'].post?.responses['201']).toMatchObject({
      headers: { 'Idempotent-Replayed': { $ref: '#/components/headers/Idempotent-Replayed' } },
    });
    expect(document.paths['/health'].get?.responses['200']).not.toHaveProperty('headers.RateLimit');
  });

  it('documents the voice socket: no key, its handshake answers (101, 426 with Upgrade, 429, 503) and its protocol', async () => {
    const document = await generateOpenApiDocument(loadConfig({}));
    const socket = document.paths['/conversations/{conversationId}/voice'].get!;
    expect(socket.security).toEqual([]);
    expect(Object.keys(socket.responses)).toEqual(expect.arrayContaining(['101', '426', '429', '503']));
    expect(socket.responses).not.toHaveProperty('403'); // the handshake tells nothing of the conversation (4403 after start)
    expect(socket.responses['426']).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } },
      headers: { Upgrade: { schema: { enum: ['websocket'] } }, Connection: {} },
    });
    const protocol = [
      ...['"type":"start"', '"token":"vac_…"', '"sampleRate":16000', '8000 to 48000', 'default 16000', '"type":"ready"'],
      ...['"type":"text"', '"type":"end"', '"type":"transcript"', '"type":"reply"', '"type":"reply.done"', '"type":"clear"'],
      ...['"type":"error"', '"type":"ended"', '256 KiB', 'Origin', 'CORS_ORIGINS'],
      ...['4404', '4408', '4409', '4410', '1007', '1008', '1009', '1011', '1001', '1000'].map((code) => ` ${code} `),
    ];
    const description = ` ${socket.description} `.replace(/\s+/g, ' ');
    expect(protocol.filter((fragment) => !description.includes(fragment))).toEqual([]);
  });

  it('documents the voice preview as audio/mpeg, and its errors as JSON in the error shape', async () => {
    const document = await generateOpenApiDocument(loadConfig({}));
    const responses = document.paths['/voices/{voiceId}/preview'].get!.responses as Record<string, { content?: object }>;
    expect(responses['200'].content).toEqual({ 'audio/mpeg': { schema: { type: 'string', format: 'binary' } } });
    const errors = Object.entries(responses).filter(([status]) => Number(status) >= 400);
    expect(errors.map(([status]) => status)).toEqual(expect.arrayContaining(['400', '403', '404', '503']));
    for (const [, response] of errors)
      expect(response.content).toEqual({ 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } });
  });

  it.each([
    ['at startup, as a service builds it', true],
    ['at the first request for it, as the tests build it', false],
  ])('is served at /openapi.json and Swagger UI at /docs without a key, built once, %s', async (_when, atStartup) => {
    const built = jest.spyOn(SwaggerModule, 'createDocument');
    try {
      const context = await createTestContext({}, { openApiAtStartup: atStartup });
      try {
        expect(built).toHaveBeenCalledTimes(atStartup ? 1 : 0);
        const served = await context.http.get('/openapi.json').expect(200);
        expect(served.text).toBe(JSON.stringify(await generateOpenApiDocument(loadConfig({}))));
        await context.http.get('/openapi.json').expect(200);
        await context.http.get('/docs').expect(200);
        expect((await context.http.get('/docs/swagger-ui-init.js').expect(200)).text).toContain('"title": "Voice Agent API"');
        // And generateOpenApiDocument's, above.
        expect(built).toHaveBeenCalledTimes(2);
      } finally {
        await context.close();
      }
    } finally {
      built.mockRestore();
    }
  });
});
