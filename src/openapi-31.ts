/**
 * What an OpenAPI 3.0 document says differently in 3.1, rewritten in place (`upgradeSchemasTo31`).
 *
 * @nestjs/swagger, asked for 3.1 (`setOpenAPIVersion`), writes `openapi: 3.1.0` and turns the `nullable` of the
 * schemas it generates into type arrays; the rest of its output, and what src/openapi.ts adds by hand afterwards,
 * still speaks 3.0. In 3.1 a Schema Object is a JSON Schema 2020-12 schema:
 * - `nullable: true` does not exist: `type: [T, "null"]` (an `enum` gains `null`; a `$ref` or a combinator becomes
 *   `anyOf: [it, {type: "null"}]`);
 * - `exclusiveMinimum` / `exclusiveMaximum` are numbers, not booleans beside `minimum` / `maximum`;
 * - `example` is deprecated for `examples`, an array;
 * - base64 text is `contentEncoding: base64`, not `format: byte`.
 * Only Schema Objects change: a Parameter's, a Header's or a Media Type's `example` is still 3.1's.
 */

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The keywords whose value is a schema, an array of schemas, or a map of schemas (JSON Schema 2020-12's applicators). */
const SUBSCHEMA = [
  'additionalProperties',
  'items',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
];
const SUBSCHEMA_ARRAYS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'dependentSchemas'];
const COMBINATORS = ['allOf', 'anyOf', 'oneOf'];

/** `nullable` → `null` in the type (or the enum), or `anyOf` with `{type: "null"}` around a `$ref` or a combinator. */
function convertNullable(schema: Json): void {
  if (!('nullable' in schema)) return;
  const nullable = schema.nullable === true;
  delete schema.nullable;
  if (!nullable) return;
  const combinator = COMBINATORS.find((key) => Array.isArray(schema[key]));
  if ('$ref' in schema || combinator) {
    const inner: Json = {};
    for (const key of ['$ref', ...COMBINATORS]) {
      if (key in schema) {
        inner[key] = schema[key];
        delete schema[key];
      }
    }
    schema.anyOf = [inner, { type: 'null' }];
    return;
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as unknown[]) : [schema.type];
    schema.type = types.includes('null') ? types : [...types, 'null'];
  }
  if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...(schema.enum as unknown[]), null];
}

/** `exclusiveMinimum: true` beside `minimum: n` → `exclusiveMinimum: n` (the same for the maximum). */
function convertExclusiveBound(schema: Json, exclusive: 'exclusiveMinimum' | 'exclusiveMaximum', bound: 'minimum' | 'maximum'): void {
  if (typeof schema[exclusive] !== 'boolean') return;
  if (schema[exclusive] && typeof schema[bound] === 'number') {
    schema[exclusive] = schema[bound];
    delete schema[bound];
  } else delete schema[exclusive];
}

/** `example: x` → `examples: [x]` (kept after any `examples` already there). */
function convertExample(schema: Json): void {
  if (!('example' in schema)) return;
  const examples = Array.isArray(schema.examples) ? (schema.examples as unknown[]) : [];
  schema.examples = [...examples, schema.example];
  delete schema.example;
}

/** `format: byte` (base64) → `contentEncoding: base64`. */
function convertByteFormat(schema: Json): void {
  if (schema.format !== 'byte') return;
  delete schema.format;
  schema.contentEncoding = 'base64';
}

/** Rewrites one Schema Object and every schema inside it. */
function upgradeSchema(schema: unknown): void {
  if (!isObject(schema)) return;
  convertNullable(schema);
  convertExclusiveBound(schema, 'exclusiveMinimum', 'minimum');
  convertExclusiveBound(schema, 'exclusiveMaximum', 'maximum');
  convertExample(schema);
  convertByteFormat(schema);
  for (const key of SUBSCHEMA) upgradeSchema(schema[key]);
  for (const key of SUBSCHEMA_ARRAYS) if (Array.isArray(schema[key])) (schema[key] as unknown[]).forEach(upgradeSchema);
  for (const key of SUBSCHEMA_MAPS) if (isObject(schema[key])) Object.values(schema[key]).forEach(upgradeSchema);
}

/**
 * Finds the Schema Objects of the document's other objects: `components.schemas`, and the `schema` of every
 * Parameter, Header and Media Type, wherever they are (paths, webhooks, components). Examples and extensions (`x-`)
 * are data, not looked into.
 */
function visit(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(visit);
  if (!isObject(node)) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'example' || key === 'examples' || key.startsWith('x-')) continue;
    if (key === 'schema') upgradeSchema(value);
    else visit(value);
  }
}

/** Rewrites every Schema Object of an OpenAPI 3.1 document that still says things the 3.0 way (see above). */
export function upgradeSchemasTo31(document: { components?: { schemas?: object } }): void {
  const { schemas, ...otherComponents } = document.components ?? {};
  Object.values(schemas ?? {}).forEach(upgradeSchema);
  visit({ ...document, components: otherComponents });
}
