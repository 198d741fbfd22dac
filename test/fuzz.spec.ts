import * as fc from 'fast-check';
import { DataSource } from 'typeorm';
import type { OpenAPIObject } from '@nestjs/swagger';
import { loadConfig } from '../src/config/config';
import { generateOpenApiDocument } from '../src/openapi';
import { WebhookTargets } from '../src/webhooks/webhook-targets';
import { accountFingerprint, createTestContext, TestAccount, TestContext } from './helpers';
import { FakeTwilio } from './support/fake-twilio';
import { connectNumber, telephonyOverrides } from './support/telephony';

/**
 * Property-based fuzzing of every operation in the OpenAPI document: random paths, ids, query values, JSON
 * bodies (wrong types, huge strings, deep nesting, unicode, nulls, prototype-pollution keys) and headers,
 * and values at the edges the document declares: every minLength/maxLength ± 1 counted in code points with
 * astral characters, combining marks, variation selectors and ZWJ sequences; every minimum/maximum and one
 * past it; every ISO 8601 form for date-time fields. The edges are read from the document, so a new field
 * is covered as soon as it is documented.
 * Properties: never a 5xx; every error in the API's shape; a rejected write leaves the database unchanged;
 * nothing pollutes Object.prototype. FUZZ_RUNS (default 5000) requests; FUZZ_SEED replays a failure.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 5000);

/** The parts of an OpenAPI schema the generators read. */
interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
}

interface Operation {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  path: string;
  query: Record<string, Schema>;
  body?: Schema;
}

function operations(document: OpenAPIObject): Operation[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    (['get', 'post', 'patch', 'put', 'delete'] as const)
      .filter((method) => item[method])
      .map((method) => {
        const operation = item[method]!;
        const parameters = (operation.parameters ?? []) as { in: string; name: string; schema?: Schema }[];
        const body = (operation.requestBody as { content?: Record<string, { schema?: Schema }> } | undefined)?.content?.['application/json']
          ?.schema;
        return {
          method,
          path,
          query: Object.fromEntries(parameters.filter((p) => p.in === 'query').map((p) => [p.name, p.schema ?? {}])),
          body,
        };
      }),
  );
}

/** Units of text whose code points differ from their UTF-16 length, graphemes or what validator.js counts. */
const TEXT_UNITS = [
  'a',
  'é',
  '😀',
  'e\u0301\u0323',
  'a\uFE0F',
  '\u2764\uFE0E',
  '👩\u200D💻',
  '🏳️\u200D🌈',
  'क्ष',
  '\u{10FFFF}',
  '\u200B',
  ' ',
];

const codePoints = (text: string) => [...text].length;

/** Exactly `count` code points: `unit` repeated, completed with ASCII. */
function textOf(unit: string, count: number): string {
  const repeated = unit.repeat(Math.floor(count / codePoints(unit)));
  return repeated + 'b'.repeat(count - codePoints(repeated));
}

/** Text at a length limit and one past it, in code points, made of a random mix of TEXT_UNITS, sometimes padded with white space. */
function boundaryText(min: number, max: number): fc.Arbitrary<string> {
  const lengths = [...new Set([min - 1, min, min + 1, max - 1, max, max + 1].filter((length) => length >= 0))];
  return fc
    .record({
      unit: fc.array(fc.constantFrom(...TEXT_UNITS), { minLength: 1, maxLength: 4 }).map((units) => units.join('')),
      length: fc.constantFrom(...lengths),
      padding: fc.constantFrom('', '', ' ', '\t\n '),
    })
    .map(({ unit, length, padding }) => `${padding}${textOf(unit, length)}${padding}`);
}

/** A number at each documented limit, one past it, and halfway past (for integers). */
function boundaryNumber(schema: Schema): fc.Arbitrary<number> {
  const edges = [schema.minimum, schema.maximum].filter((edge): edge is number => edge !== undefined);
  const values = edges.flatMap((edge) => [edge, edge - 1, edge + 1, edge - 0.5, edge + 0.5]);
  return fc.constantFrom(...values, 0, -1, 2 ** 31 - 1, 2 ** 31, 2 ** 53, -(2 ** 31) - 1);
}

const pad = (value: number, width: number) => String(value).padStart(width, '0');

/**
 * Dates and times in every form ISO 8601 allows (and some it does not): extended and basic formats, week and
 * ordinal dates, reduced precision, offsets as Z, ±hh, ±hhmm, ±hh:mm, none, lower case, 24:00, leap seconds,
 * months and days out of range, the years 0000 and 9999, fractions of any length.
 */
const isoDateTime = fc
  .record({
    year: fc.constantFrom(0, 1, 99, 1900, 1969, 2000, 2024, 2025, 2026, 9999),
    month: fc.integer({ min: 0, max: 13 }),
    day: fc.integer({ min: 0, max: 32 }),
    week: fc.integer({ min: 0, max: 54 }),
    weekday: fc.integer({ min: 0, max: 8 }),
    ordinal: fc.integer({ min: 0, max: 367 }),
    hour: fc.constantFrom(0, 9, 12, 23, 24),
    minute: fc.constantFrom(0, 30, 59, 60),
    second: fc.constantFrom(0, 1, 59, 60),
    fraction: fc.constantFrom('', '', '.1', '.123', '.123456', '.123456789', `.${'9'.repeat(40)}`, ',5', '.'),
    offset: fc.constantFrom(
      'Z',
      'Z',
      'z',
      '+05:30',
      '-08:00',
      '+00:00',
      '-00:00',
      '+23:59',
      '+24:00',
      '+05',
      '+0530',
      '-0800',
      '+05:30:00',
      '',
      ' UTC',
    ),
    separator: fc.constantFrom('T', 'T', 'T', 't', ' '),
    form: fc.constantFrom(
      'extended',
      'extended',
      'extended',
      'basic',
      'week',
      'week-time',
      'ordinal',
      'ordinal-time',
      'date',
      'year-month',
      'minutes',
      'hours',
      'expanded',
    ),
  })
  .map((d) => {
    const date = `${pad(d.year, 4)}-${pad(d.month, 2)}-${pad(d.day, 2)}`;
    const time = `${pad(d.hour, 2)}:${pad(d.minute, 2)}:${pad(d.second, 2)}${d.fraction}`;
    switch (d.form) {
      case 'basic':
        return `${pad(d.year, 4)}${pad(d.month, 2)}${pad(d.day, 2)}T${time.replace(/:/g, '')}${d.offset.replace(':', '')}`;
      case 'week':
        return `${pad(d.year, 4)}-W${pad(d.week, 2)}-${d.weekday}`;
      case 'week-time':
        return `${pad(d.year, 4)}-W${pad(d.week, 2)}-${d.weekday}T${time}${d.offset}`;
      case 'ordinal':
        return `${pad(d.year, 4)}-${pad(d.ordinal, 3)}`;
      case 'ordinal-time':
        return `${pad(d.year, 4)}-${pad(d.ordinal, 3)}T${time}${d.offset}`;
      case 'date':
        return date;
      case 'year-month':
        return date.slice(0, 7);
      case 'minutes':
        return `${date}${d.separator}${pad(d.hour, 2)}:${pad(d.minute, 2)}${d.offset}`;
      case 'hours':
        return `${date}${d.separator}${pad(d.hour, 2)}${d.offset}`;
      case 'expanded':
        return `+00${date}T${time}${d.offset}`;
      default:
        return `${date}${d.separator}${time}${d.offset}`;
    }
  });

const hostileString = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom(
    '',
    ' ',
    '%',
    '_',
    '\\',
    "'; DROP TABLE agents; --",
    '../../etc/passwd',
    '\u0000',
    '\uD800',
    'नमस्ते',
    '🙂',
    'NaN',
    'null',
    '-1',
    '1e309',
  ),
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

const jsonValue = fc.oneof(
  { weight: 5, arbitrary: jsonScalar },
  fc.jsonValue({ maxDepth: 4 }),
  deepNesting,
  fc.array(jsonScalar, { maxLength: 5 }),
);

type Schemas = Record<string, Schema>;

const resolve = (schema: Schema, schemas: Schemas): Schema => (schema.$ref ? (schemas[schema.$ref.split('/').pop()!] ?? {}) : schema);

/** The smallest valid-looking value of a schema: its first enum value, one character, its minimum. */
function minimalValue(schema: Schema, schemas: Schemas): unknown {
  const resolved = resolve(schema, schemas);
  if (resolved.enum) return resolved.enum[0];
  if (resolved.properties)
    return Object.fromEntries(Object.entries(resolved.properties).map(([name, property]) => [name, minimalValue(property, schemas)]));
  if (resolved.type === 'integer' || resolved.type === 'number') return resolved.minimum ?? 0;
  if (resolved.type === 'boolean') return true;
  if (resolved.type === 'array') return [];
  return 'x';
}

/**
 * A value for a documented field, at the edges its schema declares (or, for a field without any, a valid-looking
 * value of its type); hostile values of any type are mixed in by the callers.
 */
function edgeValue(schema: Schema, schemas: Schemas, depth = 0): fc.Arbitrary<unknown> {
  const resolved = resolve(schema, schemas);
  if (resolved.enum) return fc.constantFrom(...resolved.enum, `${String(resolved.enum[0])} `, String(resolved.enum[0]).toUpperCase());
  if (resolved.format === 'date-time') return isoDateTime;
  if (resolved.format === 'email')
    return fc.oneof(
      fc.emailAddress(),
      boundaryText(0, resolved.maxLength ?? 320).map((text) => `${text}@example.com`),
    );
  if (resolved.type === 'string' && resolved.pattern) {
    const max = resolved.maxLength ?? 20;
    return fc.oneof(
      fc.constantFrom(max - 1, max, max + 1).map((length) => '1'.repeat(length)),
      boundaryText(resolved.minLength ?? 0, max),
    );
  }
  if (resolved.type === 'string' && resolved.maxLength !== undefined) return boundaryText(resolved.minLength ?? 0, resolved.maxLength);
  if (resolved.type === 'integer' || resolved.type === 'number') return boundaryNumber(resolved);
  if (resolved.type === 'boolean') return fc.boolean();
  if (resolved.type === 'array' && resolved.items && depth < 2) {
    const item = edgeValue(resolved.items, schemas, depth + 1);
    const arrays = [fc.array(item, { maxLength: 3 })];
    // At and past the item limit: small valid items, so that only the count is at its edge.
    const small = minimalValue(resolved.items, schemas);
    if (resolved.maxItems)
      arrays.push(fc.constantFrom(resolved.maxItems, resolved.maxItems + 1).map((length) => Array.from({ length }, () => small)));
    return fc.oneof(...arrays);
  }
  if (resolved.properties && depth < 2) return edgeObject(resolved, schemas, depth + 1);
  return jsonValue;
}

/** An object with a random subset of the schema's properties, each at its edges or hostile. */
function edgeObject(schema: Schema, schemas: Schemas, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const properties = Object.entries(schema.properties ?? {});
  if (properties.length === 0) return fc.constant({});
  return fc
    .subarray(properties, { maxLength: Math.min(4, properties.length) })
    .chain((chosen) =>
      fc
        .tuple(...chosen.map(([, property]) => fc.oneof({ weight: 4, arbitrary: edgeValue(property, schemas, depth) }, jsonScalar)))
        .map((values) => Object.fromEntries(chosen.map(([name], index) => [name, values[index]]))),
    );
}

/** Bodies sent as raw JSON text so that keys such as __proto__ survive serialisation. */
function bodyArbitrary(body: Schema | undefined, schemas: Schemas): fc.Arbitrary<string> {
  const properties = Object.keys(resolve(body ?? {}, schemas).properties ?? {});
  const known = properties.length ? fc.constantFrom(...properties) : fc.constant('name');
  const key = fc.oneof(
    { weight: 4, arbitrary: known },
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'accountId', 'id', 'isTest'),
    fc.string({ maxLength: 10 }),
  );
  const object = fc
    .array(fc.tuple(key, jsonValue), { maxLength: 6 })
    .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`);
  const atTheEdges = body ? edgeObject(resolve(body, schemas), schemas).map((value) => JSON.stringify(value)) : object;
  // Prototype pollution attempts, at the top and inside a documented field: what the check after each request looks for.
  const pollution = fc
    .tuple(
      known,
      fc.constantFrom(
        '{"__proto__":{"polluted":1}}',
        '{"constructor":{"prototype":{"polluted":1}}}',
        '{"__proto__":{"nested":{"polluted":1}}}',
      ),
    )
    .chain(([field, payload]) =>
      fc.constantFrom(payload, `{${JSON.stringify(field)}:${payload}}`, `{${JSON.stringify(field)}:[${payload}]}`),
    );
  return fc.oneof(
    { weight: 8, arbitrary: atTheEdges },
    { weight: 4, arbitrary: object },
    pollution,
    jsonValue.map((v) => JSON.stringify(v) ?? 'null'),
    fc.constantFrom('', '{', '{"a":', 'not json', '[]', 'null'),
  );
}

function queryArbitrary(query: Record<string, Schema>, schemas: Schemas): fc.Arbitrary<string> {
  const names = Object.keys(query);
  const hostile = fc.oneof(hostileString, fc.integer().map(String), fc.constantFrom('0', '1', '99999999999999999999', '-5', '1.5', 'true'));
  const known = names.map((name) =>
    fc.tuple(
      fc.constant(name),
      fc.oneof(
        {
          weight: 3,
          arbitrary: edgeValue(query[name], schemas).map((value) => (typeof value === 'string' ? value : (JSON.stringify(value) ?? ''))),
        },
        hostile,
      ),
    ),
  );
  const unknown = fc.tuple(fc.string({ maxLength: 8 }), hostile);
  const pair = known.length ? fc.oneof({ weight: 4, arbitrary: fc.oneof(...known) }, unknown) : unknown;
  return fc.array(pair, { maxLength: 4 }).map((pairs) => pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&'));
}

/** A documented field with edges to try: a body property or a query parameter of one operation. */
interface EdgeTarget {
  operation: Operation;
  location: 'body' | 'query';
  name: string;
  schema: Schema;
}

/** Whether the schema declares edges (lengths, bounds, a format, a pattern, an enum, an item count). */
const hasEdges = (schema: Schema, schemas: Schemas) => {
  const resolved = resolve(schema, schemas);
  return [resolved.maxLength, resolved.minimum, resolved.maximum, resolved.format, resolved.pattern, resolved.enum, resolved.maxItems].some(
    (edge) => edge !== undefined,
  );
};

function edgeTargets(ops: Operation[], schemas: Schemas): EdgeTarget[] {
  return ops
    .flatMap((operation) => [
      ...Object.entries(resolve(operation.body ?? {}, schemas).properties ?? {}).map(([name, schema]) => ({
        operation,
        location: 'body' as const,
        name,
        schema,
      })),
      ...Object.entries(operation.query).map(([name, schema]) => ({ operation, location: 'query' as const, name, schema })),
    ])
    .filter((target) => hasEdges(target.schema, schemas));
}

describe('fuzzing every operation of the OpenAPI document', () => {
  let context: TestContext;
  let account: TestAccount;
  let dataSource: DataSource;
  let ops: Operation[];
  let schemas: Schemas;
  const validIds: string[] = [];
  /** An existing resource of the account for each path parameter, so that focused requests reach validation and the database. */
  const idsByParameter: Record<string, string> = {};
  /** The id of the key the fuzz sends: a random path id must not revoke it (the rest of the run would be 401s). */
  let ownKeyId = '';
  /** The id of the conversation's agent, which no path may name (see beforeAll). */
  let talkerId = '';
  /** The bearer token of the conversation whose id is among validIds (the conversation routes take it instead of a key). */
  let conversationToken = '';
  /** The stand-in carrier of the account's phone number. */
  let carrier: FakeTwilio;

  beforeAll(async () => {
    const document = await generateOpenApiDocument(loadConfig({}));
    ops = operations(document);
    schemas = (document.components?.schemas ?? {}) as Schemas;
    // Nothing changes the account in the background between two fingerprints: conversations do not end by
    // themselves during the run, and a delivery to a webhook the fuzz created is attempted at once and once (no
    // retry; no name resolves, and an address literal gets a short timeout), while accountFingerprint waits for it.
    // Phone numbers are checked with a stand-in carrier (the fuzz's own credentials are refused by it: a 422), and a
    // speech-to-text provider is configured (never reached: no call connects), so that placing a call can succeed.
    carrier = await FakeTwilio.start();
    context = await createTestContext({
      ...telephonyOverrides(carrier),
      conversationIdleSeconds: 7 * 24 * 3600,
      webhooks: { allowPrivateTargets: false, timeoutMs: 500, retrySeconds: [], retentionDays: 30 },
    });
    context.app.get(WebhookTargets).resolver = async (name) =>
      Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' }));
    dataSource = context.app.get(DataSource);
    account = await context.createAccount();
    const agent = (await context.as(account).post('/agents').send({ name: 'Fuzz target' }).expect(201)).body;
    // Published, so that a number of its may pin version 1 (agentVersion), a pin that reaches the database.
    await context.as(account).post(`/agents/${agent.id}/versions`).send({}).expect(201);
    const kb = (await context.as(account).post('/knowledge-bases').send({ name: 'Fuzz KB' }).expect(201)).body;
    const source = (
      await context
        .as(account)
        .post(`/knowledge-bases/${kb.id}/sources`)
        .send({ name: 'Fuzz source', content: 'Opening hours: nine to six. दुकान सुबह नौ बजे खुलती है।' })
        .expect(201)
    ).body;
    // A url source (its fetch is refused at once: loopback), so that refresh can succeed too.
    const urlSource = (
      await context.as(account).post(`/knowledge-bases/${kb.id}/sources`).send({ type: 'url', content: 'http://127.0.0.1:9/' }).expect(201)
    ).body;
    const site = (await context.as(account).post('/widget/sites').send({ name: 'Fuzz site' }).expect(201)).body;
    const call = (await context.as(account).post('/calls').send({ name: 'Fuzz call' }).expect(201)).body;
    // A key the focused requests may revoke (DELETE /api-keys/{keyId}); the one the fuzz sends is never a target.
    const spareKey = (await context.as(account).post('/api-keys').send({ name: 'Fuzz spare' }).expect(201)).body;
    ownKeyId = String(((await context.as(account).get('/api-keys').expect(200)).body as { id: number }[])[0].id);
    // Its agent is one no path names (an id of another kind can be the same number: such a parameter is left
    // out): deleting a conversation's agent ends the conversation at its next message, a 410 that changes the
    // database by design, which would make that refusal look like a defect.
    const talker = (await context.as(account).post('/agents').send({ name: 'Fuzz talker' }).expect(201)).body;
    talkerId = String(talker.id);
    const conversation = (await context.as(account).post(`/agents/${talker.id}/conversations`).send({}).expect(201)).body;
    conversationToken = conversation.token;
    validIds.push(String(agent.id), String(kb.id), String(urlSource.id), conversation.conversationId);
    Object.assign(idsByParameter, {
      agentId: agent.id,
      kbId: kb.id,
      sourceId: source.id,
      siteId: site.id,
      callId: call.id,
      siteKey: site.siteKey,
      keyId: spareKey.id,
      conversationId: conversation.conversationId,
      phoneNumberId: (await connectNumber(context, account, carrier, { agentId: agent.id })).phone.id,
    });
  });
  afterAll(async () => {
    await context.close();
    await carrier.close();
  });

  /** A fingerprint of everything the account owns (row versions, once background work has settled: see accountFingerprint). */
  const fingerprint = () => accountFingerprint(dataSource, account.id);

  it(`answers ${RUNS} random requests without a 5xx, in the error shape, changing nothing when it refuses`, async () => {
    expect(ops.length).toBeGreaterThan(5);
    const pathParam = fc
      .oneof(
        { weight: 3, arbitrary: fc.constantFrom(...validIds) },
        fc.integer({ min: -10, max: 3_000_000_000 }).map(String),
        fc.uuid().map(String),
        hostileString.filter((s) => s.length < 200).map(encode),
      )
      .filter((param) => param !== ownKeyId && param !== talkerId);
    // Built once per operation, not on every run.
    const requests = ops.map((operation) =>
      fc.record({
        operation: fc.constant(operation),
        params: fc.array(pathParam, { minLength: 3, maxLength: 3 }),
        query: queryArbitrary(operation.query, schemas),
        body: ['post', 'patch', 'put'].includes(operation.method) ? bodyArbitrary(operation.body, schemas) : fc.constant(undefined),
        keyMode: fc.constantFrom('valid', 'valid', 'valid', 'valid', 'missing', 'garbage'),
        contentType: fc.constantFrom(
          'application/json',
          'application/json',
          'application/json; charset=utf-8',
          'text/plain',
          'application/xml',
          '',
        ),
      }),
    );
    // Focused: one documented field at its edges (the others left out, or one more), with a valid key, a JSON
    // body and existing ids, so that the value reaches the validation and, when it passes, the database.
    const targets = edgeTargets(ops, schemas);
    expect(targets.length).toBeGreaterThan(30);
    const focused = targets.map((target) => {
      const value = edgeValue(target.schema, schemas);
      const operation = target.operation;
      const params = fc.constant(
        operation.path.match(/\{[^}]+\}/g)?.map((parameter) => encode(String(idsByParameter[parameter.slice(1, -1)] ?? '1'))) ?? [],
      );
      const others = operation.body ? edgeObject({ properties: resolve(operation.body, schemas).properties }, schemas) : fc.constant({});
      return fc.record({
        operation: fc.constant(operation),
        params,
        query:
          target.location === 'query'
            ? value.map((edge) => `${encode(target.name)}=${encode(typeof edge === 'string' ? edge : (JSON.stringify(edge) ?? ''))}`)
            : fc.constant(''),
        body:
          target.location === 'body'
            ? fc.tuple(fc.oneof(fc.constant({}), others), value).map(([rest, edge]) => JSON.stringify({ ...rest, [target.name]: edge }))
            : ['post', 'patch', 'put'].includes(operation.method)
              ? fc.constant('{}')
              : fc.constant(undefined),
        keyMode: fc.constant('valid'),
        contentType: fc.constant('application/json'),
      });
    });
    const request = fc.oneof({ weight: 1, arbitrary: fc.oneof(...requests) }, { weight: 1, arbitrary: fc.oneof(...focused) });
    // The account's fingerprint as of now, while known: nothing but this test writes to the account, so the
    // fingerprint taken after a refused write is the one before the next write.
    let current: string | undefined;
    const statuses = new Map<number, number>();

    const run = await fc.check(
      fc.asyncProperty(request, fc.context(), async (input, log) => {
        const op = input.operation;
        let index = 0;
        const path = op.path.replace(/\{[^}]+\}/g, () => input.params[index++]);
        const { query, body } = input;
        const url = query ? `${path}?${query}` : path;
        const isWrite = op.method !== 'get';
        const before = isWrite ? (current ??= await fingerprint()) : '';

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
          if (isWrite) {
            current = await fingerprint();
            if (current !== before)
              problems.push(`a refused write (${response.status} ${String(response.body?.message).slice(0, 80)}) changed the database`);
          }
        }
        if (isWrite && response.status < 400) current = undefined;
        if ('polluted' in Object.prototype || 'nested' in Object.prototype) problems.push('Object.prototype was polluted');
        // Thrown, so that fast-check shrinks the request to the smallest one that still fails.
        if (problems.length)
          throw new Error(`${op.method.toUpperCase()} ${url.slice(0, 120)} body=${String(body).slice(0, 120)}: ${problems.join('; ')}`);
      }),
      { numRuns: RUNS, seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined },
    );
    // Reported briefly: the counterexample itself can be megabytes.
    if (run.failed)
      throw new Error(
        `fuzz failed (seed ${run.seed}, path ${run.counterexamplePath}, ${run.numShrinks} shrinks): ${String(run.errorInstance).slice(0, 2_000)}`,
      );
    // The requests reached the handlers, not only the guard and the body parser.
    const successes = [...statuses].filter(([status]) => status < 300).reduce((sum, [, count]) => sum + count, 0);
    expect(successes).toBeGreaterThan(RUNS * 0.05);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(RUNS * 0.05);
    expect(statuses.get(404) ?? 0).toBeGreaterThan(RUNS * 0.02);
  }, 600_000);

  // File uploads (contract section 16): multipart bodies, which the JSON fuzz above never sends.
  const UPLOAD_RUNS = Math.max(100, Math.round(RUNS / 50));
  it(`answers ${UPLOAD_RUNS} random file uploads without a 5xx, in the error shape, changing nothing when it refuses`, async () => {
    // A knowledge base of its own: the test above may have deleted the shared one (a DELETE that succeeds is allowed).
    const kbId = String((await context.as(account).post('/knowledge-bases').send({}).expect(201)).body.id);
    const bytes = (maxLength: number) => fc.uint8Array({ maxLength }).map((array) => Buffer.from(array));
    const fileData = fc.oneof(
      bytes(2048),
      bytes(2048).map((rest) => Buffer.concat([Buffer.from('%PDF-1.7\n'), rest])),
      bytes(2048).map((rest) => Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), rest])),
      hostileString.map((text) => Buffer.from(text)),
      fc.constantFrom('<!doctype html><p>Hours: nine to six</p>', 'a,b\n1,2\n', '# Title\n\nText', '').map((text) => Buffer.from(text)),
    );
    const disposition = fc.oneof(
      hostileString.map((name) => `filename="${name.replace(/["\r\n]/g, '')}"`),
      hostileString.map((name) => `filename*=UTF-8''${encode(name)}`),
      fc.constantFrom('', 'filename=""', 'filename="../../etc/passwd"', 'filename="faq.pdf"'),
    );
    const part = fc.record({
      field: fc.oneof(fc.constantFrom('file', 'file', 'name', 'type', 'content'), fc.string({ maxLength: 12 })),
      disposition,
      contentType: fc.constantFrom('', 'application/pdf', 'text/plain', 'application/octet-stream'),
      data: fileData,
    });
    // Mostly a form with a file part first (so that most uploads reach the storage and the reading), sometimes any parts.
    const parts = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.tuple(part, fc.array(part, { maxLength: 2 })).map(([file, rest]) => [{ ...file, field: 'file' }, ...rest]),
      },
      fc.array(part, { maxLength: 4 }),
    );
    const upload = fc.record({
      parts,
      boundary: fc.constantFrom('fuzzboundary', 'fuzzboundary', 'fuzzboundary', 'other', ''),
      // Sometimes cut short (a malformed form).
      cut: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, fc.nat()),
      kbId: fc.oneof({ weight: 4, arbitrary: fc.constant(kbId) }, fc.constantFrom('99999999', 'abc', '0')),
    });
    const fixedPart = {
      disposition: 'filename="faq.md"',
      contentType: 'text/plain' as const,
      data: Buffer.from('# Hours\n\nWe open at nine.'),
    };
    const fixedUpload = { boundary: 'fuzzboundary' as const, cut: null, kbId };
    const fingerprint = () => accountFingerprint(dataSource, account.id);
    let current: string | undefined;
    const statuses = new Map<number, number>();
    const run = await fc.check(
      fc.asyncProperty(upload, async ({ parts, boundary, cut, kbId }) => {
        const body = Buffer.concat([
          ...parts.flatMap(({ field, disposition: fileName, contentType, data }) => [
            Buffer.from(
              `--fuzzboundary\r\nContent-Disposition: form-data; name="${field.replace(/["\r\n]/g, '')}"; ${fileName}\r\n` +
                (contentType ? `Content-Type: ${contentType}\r\n` : '') +
                '\r\n',
            ),
            data,
            Buffer.from('\r\n'),
          ]),
          Buffer.from('--fuzzboundary--\r\n'),
        ]);
        const sent = cut === null ? body : body.subarray(0, cut % (body.length + 1));
        const before = (current ??= await fingerprint());
        const response = await context.http
          .post(`/knowledge-bases/${kbId}/sources`)
          .set('X-Api-Key', account.apiKey)
          .set('Content-Type', boundary ? `multipart/form-data; boundary=${boundary}` : 'multipart/form-data')
          .send(sent);
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const problems: string[] = [];
        if (response.status >= 500) problems.push(`answered ${response.status}: ${JSON.stringify(response.body).slice(0, 300)}`);
        if (response.status >= 400) {
          const { statusCode, error, message, details, ...rest } = response.body ?? {};
          if (statusCode !== response.status || typeof error !== 'string' || typeof message !== 'string' || Object.keys(rest).length > 0)
            problems.push(`error not in the API's shape: ${JSON.stringify(response.body).slice(0, 300)}`);
          if (details !== undefined && !Array.isArray(details)) problems.push('details is not an array');
          current = await fingerprint();
          if (current !== before)
            problems.push(`a refused upload (${response.status} ${String(message).slice(0, 80)}) changed the database`);
        } else current = undefined;
        if (problems.length)
          throw new Error(`upload of ${parts.length} parts (${sent.length} bytes) → ${response.status}: ${problems.join('; ')}`);
      }),
      {
        numRuns: UPLOAD_RUNS,
        seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined,
        // Run first, whatever the seed: an upload that is stored and read, a form without its file, an unknown knowledge base.
        examples: [
          [{ ...fixedUpload, parts: [{ ...fixedPart, field: 'file' }] }],
          [{ ...fixedUpload, parts: [{ ...fixedPart, field: 'name' }] }],
          [{ ...fixedUpload, parts: [{ ...fixedPart, field: 'file' }], kbId: '99999999' }],
        ],
      },
    );
    if (run.failed)
      throw new Error(
        `upload fuzz failed (seed ${run.seed}, path ${run.counterexamplePath}): ${String(run.errorInstance).slice(0, 2_000)}`,
      );
    // Uploads were stored (the first example at least), and refused for their form and their knowledge base.
    expect([...statuses.keys()]).toEqual(expect.arrayContaining([201, 400, 404]));
  }, 600_000);
});
