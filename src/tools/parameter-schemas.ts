import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import { RE2JS } from 're2js';

/**
 * A tool's `parameters`: a JSON Schema of its arguments that a Chat Completions `function` accepts (an object
 * schema), checked with ajv when it is saved, and used to check the model's arguments before a call is sent.
 *
 * The schemas are the customers' (untrusted, as ajv's security notes say of such schemas), so:
 * - their size is bounded (16 KiB as compact JSON; the request body's own bounds already cap nesting at 32 levels
 *   and 10,000 values, and refuse Object.prototype's names as keys);
 * - `pattern` and `patternProperties` run on RE2 (re2js, linear time), not on JavaScript's backtracking engine,
 *   where a pattern like `^(a|a)*$` and an argument the visitor steered the model to write could hold the event
 *   loop for seconds; a pattern RE2 does not support (lookaround, backreferences) is refused when saved;
 * - ajv's code optimiser is off: compiling a schema of 150 properties took hundreds of milliseconds with it, and
 *   a small fraction without it (measured; the compiled check is as fast);
 * - no remote `$ref` is ever fetched (a reference ajv cannot resolve locally is refused when saved), and `format`
 *   is not checked.
 * Compiled checks are cached by the schema's text (at most COMPILED_CACHE_SIZE), so a call compiles nothing after
 * the first.
 */

export const MAX_PARAMETERS_BYTES = 16 * 1024;
const COMPILED_CACHE_SIZE = 256;
const MAX_PROBLEM_LENGTH = 500;

/** `pattern` and `patternProperties` matched by RE2: the interface ajv's `code.regExp` takes. */
const linearRegExp = Object.assign(
  (pattern: string) => {
    const compiled = RE2JS.compile(pattern);
    return { test: (text: string) => compiled.test(text), toString: () => pattern };
  },
  { code: 're2js' },
);

const options = {
  strict: false,
  logger: false as const,
  validateFormats: false,
  addUsedSchema: false,
  code: { optimize: false, regExp: linearRegExp },
};

/** The dialects a schema may declare in `$schema` (none: draft-07, as most generators write). */
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';
const DRAFT_07 = ['http://json-schema.org/draft-07/schema', 'http://json-schema.org/draft-07/schema#'];

let draft07: Ajv | undefined;
let draft2020: Ajv2020 | undefined;

function validatorFor(schema: Record<string, unknown>): Ajv | string {
  const dialect = schema.$schema;
  if (dialect === undefined || (typeof dialect === 'string' && DRAFT_07.includes(dialect))) return (draft07 ??= new Ajv(options));
  if (dialect === DRAFT_2020 || dialect === `${DRAFT_2020}#`) return (draft2020 ??= new Ajv2020(options));
  return `parameters.$schema must be ${DRAFT_07[0]} or ${DRAFT_2020} (or be left out, for draft-07)`;
}

const cut = (text: string) => (text.length > MAX_PROBLEM_LENGTH ? `${text.slice(0, MAX_PROBLEM_LENGTH - 1)}…` : text);

/** The compiled check of a schema (already found valid when saved), from the cache or compiled now. */
const compiled = new Map<string, ValidateFunction>();

function compile(schema: Record<string, unknown>, text: string): ValidateFunction {
  const known = compiled.get(text);
  if (known) {
    // Most recently used last: the Map's order is the eviction order.
    compiled.delete(text);
    compiled.set(text, known);
    return known;
  }
  const ajv = validatorFor(schema);
  if (typeof ajv === 'string') throw new Error(ajv);
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } finally {
    // ajv keeps every schema it compiled, by object: without this each call's fresh object would stay.
    ajv.removeSchema(schema);
  }
  compiled.set(text, validate);
  if (compiled.size > COMPILED_CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
  return validate;
}

/** Why `value` cannot be a tool's `parameters` (a message naming the field), or undefined when it can. */
export function parametersProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'parameters must be a JSON object (a JSON Schema)';
  const schema = value as Record<string, unknown>;
  if (schema.type !== 'object') return 'parameters must be a JSON Schema of type "object", as a Chat Completions function takes';
  const text = JSON.stringify(schema);
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_PARAMETERS_BYTES) return `parameters must be at most 16 KiB (16,384 bytes) as compact JSON (${bytes} here)`;
  const ajv = validatorFor(schema);
  if (typeof ajv === 'string') return ajv;
  if (!ajv.validateSchema(schema))
    return cut(`parameters is not a valid JSON Schema: ${ajv.errorsText(ajv.errors, { dataVar: 'parameters' })}`);
  try {
    compile(schema, text);
  } catch (error) {
    return cut(`parameters cannot be used: ${error instanceof Error ? error.message : 'it does not compile'}`);
  }
  return undefined;
}

/** What is wrong with `args` for the schema `parameters` (in words for the model), or undefined when they match. */
export function argumentsProblem(parameters: object, args: unknown): string | undefined {
  const validate = compile(parameters as Record<string, unknown>, JSON.stringify(parameters));
  if (validate(args)) return undefined;
  return cut(describe(validate.errors ?? []));
}

function describe(errors: ErrorObject[]): string {
  return errors
    .map((error) => `${error.instancePath ? `arguments${error.instancePath}` : 'arguments'} ${error.message ?? 'is invalid'}`)
    .join('; ');
}
