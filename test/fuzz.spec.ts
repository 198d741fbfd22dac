import * as fc from 'fast-check';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import type { OpenAPIObject } from '@nestjs/swagger';
import { loadConfig } from '../src/config/config';
import { generateOpenApiDocument } from '../src/openapi';
import { createTestContext, TestAccount, TestContext } from './helpers';

/**
 * Property-based fuzzing of every operation in the OpenAPI document: random paths, ids, query values, JSON
 * bodies (wrong types, huge strings, deep nesting, unicode, nulls, prototype-pollution keys) and headers.
 * Properties: never a 5xx; every error in the API's shape; a rejected write leaves the database unchanged;
 * nothing pollutes Object.prototype. FUZZ_RUNS (default 5000) requests; FUZZ_SEED replays a failure.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 5000);

interface Operation {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  path: string;
  queryNames: string[];
  bodyProperties: string[];
}

function operations(document: OpenAPIObject): Operation[] {
  const schemas = (document.components?.schemas ?? {}) as Record<string, { properties?: Record<string, unknown> }>;
  return Object.entries(document.paths).flatMap(([path, item]) =>
    (['get', 'post', 'patch', 'put', 'delete'] as const)
      .filter((method) => item[method])
      .map((method) => {
        const operation = item[method]!;
        const parameters = (operation.parameters ?? []) as { in: string; name: string }[];
        const ref = (operation.requestBody as { content?: Record<string, { schema?: { $ref?: string } }> } | undefined)?.content?.[
          'application/json'
        ]?.schema?.$ref;
        const bodySchema = ref ? schemas[ref.split('/').pop()!] : undefined;
        return {
          method,
          path,
          queryNames: parameters.filter((p) => p.in === 'query').map((p) => p.name),
          bodyProperties: Object.keys(bodySchema?.properties ?? {}),
        };
      }),
  );
}

const hostileString = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom('', ' ', '%', '_', '\\', "'; DROP TABLE agents; --", '../../etc/passwd', '\u0000', '\uD800', 'नमस्ते', '🙂', 'NaN', 'null', '-1', '1e309'),
  fc.string({ minLength: 1000, maxLength: 70_000 }),
);

/** Percent-encodes, replacing lone surrogates (which cannot be encoded) with U+FFFD. */
function encode(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return encodeURIComponent(value.replace(/[\uD800-\uDFFF]/g, '\uFFFD'));
  }
}

const jsonScalar = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, -1, 0, 2 ** 31, 1e300),
);

const deepNesting = fc.integer({ min: 10, max: 2000 }).map((depth) => {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { nested: value };
  return value;
});

const jsonValue = fc.oneof({ weight: 5, arbitrary: jsonScalar }, fc.jsonValue({ maxDepth: 4 }), deepNesting, fc.array(jsonScalar, { maxLength: 5 }));

/** Bodies sent as raw JSON text so that keys such as __proto__ survive serialisation. */
function bodyArbitrary(properties: string[]): fc.Arbitrary<string> {
  const known = properties.length ? fc.constantFrom(...properties) : fc.constant('name');
  const key = fc.oneof({ weight: 4, arbitrary: known }, fc.constantFrom('__proto__', 'constructor', 'prototype', 'accountId', 'id', 'isTest'), fc.string({ maxLength: 10 }));
  const object = fc.array(fc.tuple(key, jsonValue), { maxLength: 6 }).map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`);
  return fc.oneof({ weight: 6, arbitrary: object }, jsonValue.map((v) => JSON.stringify(v) ?? 'null'), fc.constantFrom('', '{', '{"a":', 'not json', '[]', 'null'));
}

function queryArbitrary(names: string[]): fc.Arbitrary<string> {
  const name = fc.oneof(names.length ? fc.constantFrom(...names) : fc.constant('limit'), fc.string({ maxLength: 8 }));
  const value = fc.oneof(hostileString, fc.integer().map(String), fc.constantFrom('0', '1', '1000', '1001', '3650', '99999999999999999999', '-5', '1.5', 'true'));
  return fc.array(fc.tuple(name, value), { maxLength: 4 }).map((pairs) => pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&'));
}

describe('fuzzing every operation of the OpenAPI document', () => {
  let context: TestContext;
  let account: TestAccount;
  let dataSource: DataSource;
  let ops: Operation[];
  const validIds: string[] = [];
  /** The bearer token of the conversation whose id is among validIds (the conversation routes take it instead of a key). */
  let conversationToken = '';

  beforeAll(async () => {
    ops = operations(await generateOpenApiDocument(loadConfig({})));
    // Conversations do not end by themselves during the run (that would change the database between two fingerprints).
    context = await createTestContext({ conversationIdleSeconds: 7 * 24 * 3600 });
    dataSource = context.app.get(DataSource);
    account = await context.createAccount();
    const agent = (await context.as(account).post('/agents').send({ name: 'Fuzz target' }).expect(201)).body;
    const kb = (await context.as(account).post('/knowledge-bases').send({ name: 'Fuzz KB' }).expect(201)).body;
    await context.as(account).post(`/knowledge-bases/${kb.id}/sources`).send({ content: 'Opening hours: nine to six. दुकान सुबह नौ बजे खुलती है।' }).expect(201);
    // A url source (its fetch is refused at once: loopback), so that refresh can succeed too.
    const urlSource = (await context.as(account).post(`/knowledge-bases/${kb.id}/sources`).send({ type: 'url', content: 'http://127.0.0.1:9/' }).expect(201)).body;
    const conversation = (await context.as(account).post(`/agents/${agent.id}/conversations`).send({}).expect(201)).body;
    conversationToken = conversation.token;
    validIds.push(String(agent.id), String(kb.id), String(urlSource.id), conversation.conversationId);
  });
  afterAll(() => context.close());

  /**
   * A fingerprint of everything the account owns, in every table that has an account_id. Background work an
   * earlier request started (a url source's fetch) is let finish first: it is not the doing of the next request.
   */
  async function fingerprint(): Promise<string> {
    while ((await dataSource.query(`SELECT 1 FROM knowledge_base_sources WHERE account_id = $1 AND status = 'pending'`, [account.id])).length) await sleep(20);
    const tables = dataSource.entityMetadatas.filter((meta) => meta.columns.some((column) => column.databaseName === 'account_id'));
    const parts = await Promise.all(
      tables.map(async (meta) => {
        const [row] = await dataSource.query(
          `SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) AS digest FROM "${meta.tableName}" t WHERE account_id = $1`,
          [account.id],
        );
        return `${meta.tableName}:${row.digest}`;
      }),
    );
    return parts.join(' ');
  }

  it(`answers ${RUNS} random requests without a 5xx, in the error shape, changing nothing when it refuses`, async () => {
    expect(ops.length).toBeGreaterThan(5);
    const pathParam = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...validIds) },
      fc.integer({ min: -10, max: 3_000_000_000 }).map(String),
      fc.uuid().map(String),
      hostileString.filter((s) => s.length < 200).map(encode),
    );
    const request = fc.constantFrom(...ops).chain((operation) =>
      fc.record({
        operation: fc.constant(operation),
        params: fc.array(pathParam, { minLength: 3, maxLength: 3 }),
        query: queryArbitrary(operation.queryNames),
        body: ['post', 'patch', 'put'].includes(operation.method) ? bodyArbitrary(operation.bodyProperties) : fc.constant(undefined),
        keyMode: fc.constantFrom('valid', 'valid', 'valid', 'valid', 'missing', 'garbage'),
        contentType: fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/xml', ''),
      }),
    );
    const failures: string[] = [];
    const statuses = new Map<number, number>();

    await fc.assert(
      fc.asyncProperty(request, fc.context(), async (input, log) => {
        const op = input.operation;
        let index = 0;
        const path = op.path.replace(/\{[^}]+\}/g, () => input.params[index++]);
        const { query, body } = input;
        const url = query ? `${path}?${query}` : path;
        const isWrite = op.method !== 'get';
        const before = isWrite ? await fingerprint() : '';

        let call = context.http[op.method](url);
        if (input.keyMode === 'valid') call = call.set('X-Api-Key', account.apiKey).set('Authorization', `Bearer ${conversationToken}`);
        if (input.keyMode === 'garbage') call = call.set('X-Api-Key', 'vak_garbage').set('Authorization', 'Bearer vac_garbage');
        if (body !== undefined) {
          if (input.contentType) call = call.set('Content-Type', input.contentType);
          call = call.send(body);
        }
        const response = await call;
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        log.log(`${op.method.toUpperCase()} ${url.slice(0, 200)} body=${String(body).slice(0, 200)} → ${response.status}`);

        const problems: string[] = [];
        if (response.status >= 500) problems.push(`answered ${response.status}: ${JSON.stringify(response.body).slice(0, 300)}`);
        if (response.status >= 400) {
          const { statusCode, error, message, details, ...rest } = response.body ?? {};
          const shaped =
            statusCode === response.status &&
            typeof error === 'string' &&
            typeof message === 'string' &&
            (details === undefined || Array.isArray(details)) &&
            Object.keys(rest).length === 0;
          if (!shaped) problems.push(`error not in the API's shape: ${JSON.stringify(response.body).slice(0, 300)}`);
          if (isWrite && (await fingerprint()) !== before) problems.push('a refused write changed the database');
        }
        if (({} as Record<string, unknown>).polluted !== undefined || Object.prototype.hasOwnProperty.call(Object.prototype, 'nested')) {
          problems.push('Object.prototype was polluted');
        }
        if (problems.length) failures.push(`${op.method.toUpperCase()} ${url.slice(0, 120)} body=${String(body).slice(0, 120)}: ${problems.join('; ')}`);
        return true; // failures are collected and reported briefly below (a counterexample can be megabytes)
      }),
      { numRuns: RUNS, seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined },
    );
    expect(failures.slice(0, 10)).toEqual([]);
    // The requests reached the handlers, not only the guard and the body parser.
    const successes = [...statuses].filter(([status]) => status < 300).reduce((sum, [, count]) => sum + count, 0);
    expect(successes).toBeGreaterThan(RUNS * 0.05);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(RUNS * 0.05);
    expect(statuses.get(404) ?? 0).toBeGreaterThan(RUNS * 0.02);
  }, 600_000);
});
