/**
 * Typed rows (issue 31): the row type a repository names in `query<Row>(…)` must agree with what the statement
 * returns. `npm run sql` (sql-generator.ts) runs every statement with its examples on a migrated database; each
 * is captured with its call site (from the stack) and pg's description of its columns (name, type, origin
 * table and column). Here the description is completed from the catalog (NOT NULL, outer joins) and compared
 * with the type argument of the `query` call at that site, which the TypeScript compiler resolves: a column the
 * type lacks, a required property the statement lacks, a TypeScript type that cannot hold what pg parses the
 * PostgreSQL type into, or a column that can be NULL typed without `| null` (or `?`) is a mismatch.
 *
 * What is inferred: a plain column's nullability is its table's (NOT NULL or not), except a column of a table
 * reached through an outer join (LEFT JOIN: the joined table, a CTE's or a subquery's tables; RIGHT or FULL:
 * every table), which can be NULL. A computed expression (`count(*)`, `x IS NOT NULL`, a scalar subquery, a
 * `json_build_object`), and a column an UPDATE sets and returns, has no declared nullability: only a NULL seen in
 * an example's rows requires `| null`. A
 * json or jsonb column is any JSON value: its TypeScript type is the writer's word and is not checked.
 */
import * as path from 'node:path';
import type { Client, Connection, FieldDef, Submittable } from 'pg';
import * as ts from 'typescript';

/** Where in the source a statement was run from: the innermost frame outside src/database (the `query` call). */
export interface CallSite {
  file: string;
  line: number;
  column: number;
}

/** A statement as it ran: the method and call site that ran it, the rows its example returned (none if it failed). */
export interface CapturedStatement {
  method: string;
  text: string;
  site: CallSite | undefined;
  rows: Record<string, unknown>[];
}

/** The JavaScript value pg's default parsers (the pool's: src/database sets none) make of a PostgreSQL type. */
export type JsValue =
  { kind: 'string' | 'number' | 'boolean' | 'Date' | 'Buffer' | 'json' | 'interval' } | { kind: 'array'; element: JsValue };

/** A column of a statement's result, with what it holds once pg has parsed it. */
export interface DescribedColumn {
  name: string;
  /** The PostgreSQL type's name, for messages. */
  pgType: string;
  value: JsValue;
  /** From the table's NOT NULL and the statement's outer joins; 'unknown' for a computed expression. */
  nullable: 'yes' | 'no' | 'unknown';
  /** A NULL was seen in this column in an example's rows. */
  nullSeen: boolean;
  /** `table.column`, or undefined for a computed expression. */
  origin: string | undefined;
}

export interface DescribedStatement {
  method: string;
  text: string;
  site: CallSite | undefined;
  /** Its result's columns (none for a statement that returns no rows); undefined when PostgreSQL refused it. */
  columns: DescribedColumn[] | undefined;
  error?: string;
}

/**
 * PostgreSQL's description of a statement's result (the protocol's Parse and Describe, never executed), through
 * pg's extension point for custom queries (as pg-cursor does): a statement whose example failed (a foreign key) is
 * described all the same.
 */
class Describe implements Submittable {
  private fields: FieldDef[] = [];
  private error: Error | undefined;
  private settle: (result: { fields: FieldDef[] } | { error: Error }) => void = () => undefined;
  readonly result = new Promise<{ fields: FieldDef[] } | { error: Error }>((resolve) => (this.settle = resolve));

  constructor(private readonly text: string) {}

  submit(connection: Connection): void {
    connection.parse({ name: '', text: this.text, types: [] }, true);
    connection.describe({ type: 'S', name: '' }, true);
    connection.sync();
  }

  handleRowDescription({ fields }: { fields: FieldDef[] }): void {
    this.fields = fields;
  }

  handleError(error: Error): void {
    this.error = error;
    // pg forgets a query that failed: no ReadyForQuery reaches it.
    this.settle({ error });
  }

  handleReadyForQuery(): void {
    this.settle(this.error ? { error: this.error } : { fields: this.fields });
  }

  // Nothing else can come back from a Describe.
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}
}

/** The columns PostgreSQL says `text` returns, or why it refused to describe it. */
async function describe(client: Client, text: string): Promise<{ fields: FieldDef[] } | { error: Error }> {
  const describing = new Describe(text);
  client.query(describing);
  return describing.result;
}

/** pg-types' text parsers (`pg-types/lib/textParsers.js`) by type OID; a type without one comes back as its text. */
const SCALARS: Record<number, JsValue['kind']> = {
  16: 'boolean',
  17: 'Buffer',
  20: 'string', // int8: a string, so that no digit is lost
  21: 'number',
  23: 'number',
  26: 'number',
  114: 'json',
  700: 'number',
  701: 'number',
  1082: 'Date',
  1114: 'Date',
  1184: 'Date',
  1186: 'interval',
  3802: 'json',
};
const ARRAYS: Record<number, JsValue['kind']> = {
  199: 'json',
  651: 'string',
  791: 'string',
  1000: 'boolean',
  1001: 'Buffer',
  1005: 'number',
  1007: 'number',
  1008: 'string',
  1009: 'string',
  1014: 'string',
  1015: 'string',
  1016: 'string',
  1021: 'number',
  1022: 'number',
  1028: 'number',
  1040: 'string',
  1041: 'string',
  1115: 'Date',
  1182: 'Date',
  1183: 'string',
  1185: 'Date',
  1187: 'interval',
  1231: 'number', // numeric[]: parsed as floats, unlike numeric
  1270: 'string',
  2951: 'string',
  3807: 'json',
  3907: 'string',
};

export function jsValueOf(typeOid: number): JsValue {
  if (ARRAYS[typeOid]) return { kind: 'array', element: { kind: ARRAYS[typeOid] } as JsValue };
  return { kind: SCALARS[typeOid] ?? 'string' } as JsValue;
}

const describeValue = (value: JsValue): string => (value.kind === 'array' ? `${describeValue(value.element)}[]` : value.kind);

/** The balanced parenthesised text that starts at `open` (a `(`), without its parentheses. */
function parenthesised(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return text.slice(open + 1, i);
  }
  return text.slice(open + 1);
}

/** The body of the CTE `name` of the statement, if it has one. */
function cteBody(text: string, name: string): string | undefined {
  const match = new RegExp(`\\b${name}\\s+AS\\s+(?:NOT\\s+)?(?:MATERIALIZED\\s+)?\\(`, 'i').exec(text);
  return match ? parenthesised(text, match.index + match[0].length - 1) : undefined;
}

/** The tables a piece of SQL reads (after FROM or JOIN), a CTE's through its body. */
function tablesIn(sql: string, statement: string, seen = new Set<string>()): Set<string> {
  const tables = new Set<string>();
  for (const [, name] of sql.matchAll(/\b(?:FROM|JOIN)\s+(?:LATERAL\s+)?(\w+)/gi)) {
    const key = name.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    const body = cteBody(statement, name);
    for (const table of body ? tablesIn(body, statement, seen) : [key]) tables.add(table);
  }
  for (const match of sql.matchAll(/\b(?:FROM|JOIN)\s+(?:LATERAL\s+)?\(/gi)) {
    for (const table of tablesIn(parenthesised(sql, match.index + match[0].length - 1), statement, seen)) tables.add(table);
  }
  return tables;
}

/** The relations an outer join can make NULL: their tables, and the names the statement calls them by. */
export interface OuterJoined {
  tables: Set<string>;
  aliases: Set<string>;
}

const KEYWORDS = new Set(['on', 'using', 'where', 'join', 'left', 'right', 'full', 'inner', 'cross', 'natural', 'group', 'order', 'limit']);

/** What the statement's outer joins can make NULL: every table after a RIGHT or FULL join. */
export function outerJoinedRelations(text: string): OuterJoined | 'all' {
  const joined: OuterJoined = { tables: new Set(), aliases: new Set() };
  for (const match of text.matchAll(/\b(LEFT|RIGHT|FULL)\s+(?:OUTER\s+)?JOIN\s+(?:LATERAL\s+)?(\(|\w+)/gi)) {
    if (match[1].toUpperCase() !== 'LEFT') return 'all';
    let rest = text.slice(match.index + match[0].length);
    if (match[2] === '(') {
      const body = parenthesised(text, match.index + match[0].length - 1);
      for (const table of tablesIn(body, text)) joined.tables.add(table);
      rest = rest.slice(body.length + 1);
    } else {
      for (const table of tablesIn(`FROM ${match[2]}`, text)) joined.tables.add(table);
      joined.aliases.add(match[2].toLowerCase());
    }
    const alias = /^\s+(?:AS\s+)?(\w+)/i.exec(rest)?.[1]?.toLowerCase();
    if (alias && !KEYWORDS.has(alias)) joined.aliases.add(alias);
  }
  return joined;
}

/** The outermost select list (or RETURNING list) of a statement: what names its result's columns. */
export function resultList(text: string): string {
  let depth = 0;
  let start = -1;
  let end = text.length;
  for (const match of text.matchAll(/\b(SELECT|FROM|RETURNING)\b|[()]/gi)) {
    if (match[0] === '(') depth++;
    else if (match[0] === ')') depth--;
    else if (depth === 0 && match[0].toUpperCase() !== 'FROM') {
      start = match.index + match[0].length;
      end = text.length;
    } else if (depth === 0 && start >= 0 && end === text.length) end = match.index;
  }
  return start < 0 ? '' : text.slice(start, end);
}

/** The relation name a result column is read through (`target` in `target.id AS "id"`), when the text says. */
function qualifierOf(statement: string, column: string, attribute: string): string | undefined {
  const text = resultList(statement);
  const name = column.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const aliased = new RegExp(`\\b(\\w+)\\.\\w+\\s+AS\\s+(?:"${name}"|${name}\\b)`, 'i').exec(text);
  const plain = new RegExp(`\\b(\\w+)\\.${attribute}\\b(?!\\s+AS\\b)`, 'i').exec(text);
  const star = /\b(\w+)\.\*/i.exec(text);
  return (aliased ?? plain ?? star)?.[1]?.toLowerCase();
}

/**
 * Whether an outer join can make this column NULL: through the relation the select list names it by when the
 * text says (`turn.seq`), else whenever its table is on the outer-joined side.
 */
function outerJoinedColumn(text: string, joined: OuterJoined | 'all', column: string, table: string, attribute: string): boolean {
  if (joined === 'all') return true;
  if (!joined.tables.size && !joined.aliases.size) return false;
  const qualifier = qualifierOf(text, column, attribute);
  return qualifier ? joined.aliases.has(qualifier) : joined.tables.has(table);
}

/** Completes each captured statement's columns from the catalog of the database it ran on. */
export async function describeStatements(client: Client, captured: CapturedStatement[]): Promise<DescribedStatement[]> {
  const descriptions = new Map<string, { fields: FieldDef[] } | { error: Error }>();
  for (const { text } of captured) if (!descriptions.has(text)) descriptions.set(text, await describe(client, text));
  const fields = [...descriptions.values()].flatMap((description) => ('fields' in description ? description.fields : []));
  const tableIds = [...new Set(fields.map((field) => field.tableID).filter(Boolean))];
  const typeIds = [...new Set(fields.map((field) => field.dataTypeID))];
  const { rows: attributes } = await client.query<{ id: string; table: string; column: string; notNull: boolean }>(
    `SELECT a.attrelid || ':' || a.attnum AS id, c.relname AS table, a.attname AS column, a.attnotnull AS "notNull"
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0`,
    [tableIds],
  );
  const { rows: types } = await client.query<{ oid: number; name: string }>(
    `SELECT oid::int AS oid, format_type(oid, NULL) AS name FROM pg_type WHERE oid = ANY($1::oid[])`,
    [typeIds],
  );
  const attributeById = new Map(attributes.map((attribute) => [attribute.id, attribute]));
  const typeName = new Map(types.map((type) => [type.oid, type.name]));
  return captured.map(({ method, text, site, rows }) => {
    const description = descriptions.get(text)!;
    if ('error' in description) return { method, text, site, columns: undefined, error: description.error.message };
    const outerJoined = outerJoinedRelations(text);
    const columns = description.fields.map((field): DescribedColumn => {
      const attribute = field.tableID ? attributeById.get(`${field.tableID}:${field.columnID}`) : undefined;
      const joined = attribute && outerJoinedColumn(text, outerJoined, field.name, attribute.table, attribute.column);
      // A column an UPDATE sets is returned with its new value, an expression's (`coalesce(revoked_at, now())`).
      const set =
        attribute && new RegExp(`\\bUPDATE\\s+${attribute.table}\\b[^;]*\\bSET\\b[^;]*\\b${attribute.column}\\s*=`, 'i').test(text);
      return {
        name: field.name,
        pgType: typeName.get(field.dataTypeID) ?? String(field.dataTypeID),
        value: jsValueOf(field.dataTypeID),
        nullable: !attribute ? 'unknown' : joined ? 'yes' : set ? 'unknown' : attribute.notNull ? 'no' : 'yes',
        nullSeen: rows.some((row) => row[field.name] === null),
        origin: attribute && `${attribute.table}.${attribute.column}`,
      };
    });
    return { method, text, site, columns };
  });
}

/** The compiler's view of the sources the statements were run from. */
export function programFor(files: string[]): ts.Program {
  const configFile = ts.findConfigFile(path.join(__dirname, '..'), (file) => ts.sys.fileExists(file))!;
  const { config } = ts.readConfigFile(configFile, (file) => ts.sys.readFile(file)) as { config: unknown };
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(configFile));
  return ts.createProgram({ rootNames: [...new Set(files)], options: { ...options, noEmit: true, incremental: false } });
}

/** The `query(…)` or `stream(…)` call whose method name is at `site` (the line, then the nearest column). */
function callAt(program: ts.Program, site: CallSite): ts.CallExpression | undefined {
  const source = program.getSourceFile(site.file);
  if (!source) return undefined;
  const calls: { call: ts.CallExpression; distance: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      ['query', 'stream'].includes(node.expression.name.text)
    ) {
      const { line, character } = source.getLineAndCharacterOfPosition(node.expression.name.getStart(source));
      if (line + 1 === site.line) calls.push({ call: node, distance: Math.abs(character + 1 - site.column) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return calls.sort((a, b) => a.distance - b.distance)[0]?.call;
}

/** A property of a row type: its types (one per member of a union that has it), and whether it may be absent. */
interface RowProperty {
  types: ts.Type[];
  optional: boolean;
}

/**
 * A row type's properties by name. A union (`DeliveryRow | { id: null }`) holds a row that one of its members
 * holds: a property is optional unless every member requires it, and takes any of its members' types.
 */
function rowShape(checker: ts.TypeChecker, type: ts.Type): Map<string, RowProperty> {
  const members = type.isUnion() ? type.types : [type];
  const shape = new Map<string, RowProperty>();
  for (const member of members) {
    for (const symbol of checker.getPropertiesOfType(member)) {
      const property = shape.get(symbol.name) ?? { types: [], optional: false };
      property.types.push(checker.getTypeOfSymbol(symbol));
      property.optional ||= (symbol.flags & ts.SymbolFlags.Optional) !== 0;
      shape.set(symbol.name, property);
    }
  }
  for (const property of shape.values()) property.optional ||= property.types.length < members.length;
  return shape;
}

const isAnything = (type: ts.Type) => (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) !== 0;

/** Whether a value of the TypeScript type `type` can be NULL. */
function acceptsNull(type: ts.Type): boolean {
  if (isAnything(type) || type.flags & ts.TypeFlags.Null) return true;
  return type.isUnion() && type.types.some(acceptsNull);
}

/** Whether the TypeScript type `type` holds the (non-null) values pg makes of a column. */
function accepts(checker: ts.TypeChecker, type: ts.Type, value: JsValue): boolean {
  if (isAnything(type) || value.kind === 'json') return true;
  if (type.isUnion()) return type.types.some((member) => accepts(checker, member, value));
  switch (value.kind) {
    case 'string':
      return (type.flags & ts.TypeFlags.StringLike) !== 0;
    case 'number':
      return (type.flags & ts.TypeFlags.NumberLike) !== 0;
    case 'boolean':
      return (type.flags & ts.TypeFlags.BooleanLike) !== 0;
    case 'Date':
    case 'Buffer':
      return type.getSymbol()?.name === value.kind;
    case 'interval':
      return (type.flags & ts.TypeFlags.Object) !== 0;
    case 'array':
      return (
        (checker.isArrayType(type) || checker.isTupleType(type)) &&
        checker.getTypeArguments(type as ts.TypeReference).every((element) => accepts(checker, element, value.element))
      );
  }
}

/** What is wrong with a row type for a statement's columns (nothing: an empty list). */
function shapeMismatches(checker: ts.TypeChecker, shape: Map<string, RowProperty>, columns: DescribedColumn[]): string[] {
  const problems: string[] = [];
  const returned = new Set(columns.map((column) => column.name));
  for (const column of columns) {
    const property = shape.get(column.name);
    const what = `column "${column.name}" (${column.pgType}${column.origin ? `, ${column.origin}` : ''})`;
    if (!property) {
      problems.push(`${what} is not in the row type`);
      continue;
    }
    const typeText = property.types.map((type) => checker.typeToString(type)).join(' | ');
    if (!property.types.some((type) => accepts(checker, type, column.value))) {
      problems.push(`${what} is read as ${describeValue(column.value)}, typed ${typeText}`);
    }
    const canBeNull = column.nullable === 'yes' || column.nullSeen;
    if (canBeNull && !property.optional && !property.types.some(acceptsNull)) {
      problems.push(`${what} can be NULL (${column.nullSeen ? 'seen in an example' : 'nullable, or outer-joined'}), typed ${typeText}`);
    }
  }
  for (const [name, property] of shape) {
    if (!property.optional && !returned.has(name)) problems.push(`property "${name}" is not a column of the statement`);
  }
  return problems;
}

const where = (site: CallSite) => `${path.relative(path.join(__dirname, '..'), site.file)}:${site.line}`;

/**
 * Every disagreement between the statements and the row types of the calls that ran them, one line each. A call
 * without a type argument is skipped (its rows are not read as a type); a statement whose call cannot be found
 * is itself reported, so that no statement goes unchecked by accident.
 */
export function checkTypedRows(statements: DescribedStatement[], program = programFor(sitesOf(statements))): string[] {
  const checker = program.getTypeChecker();
  const problems: string[] = [];
  for (const { method, text, site, columns, error } of statements) {
    if (error) {
      problems.push(`${method}: PostgreSQL cannot describe ${text.slice(0, 60)}…: ${error}`);
      continue;
    }
    if (!site) {
      problems.push(`${method}: no call site in src/ for ${text.slice(0, 60)}…`);
      continue;
    }
    const call = callAt(program, site);
    if (!call) {
      problems.push(`${where(site)} (${method}): no query(…) call on that line`);
      continue;
    }
    const typeArgument = call.typeArguments?.[0];
    if (!typeArgument) continue;
    const shape = rowShape(checker, checker.getTypeFromTypeNode(typeArgument));
    for (const problem of shapeMismatches(checker, shape, columns!))
      problems.push(`${where(site)} (${method}) query<${typeArgument.getText()}>: ${problem}`);
  }
  return [...new Set(problems)].sort();
}

const sitesOf = (statements: DescribedStatement[]) => statements.flatMap(({ site }) => (site ? [site.file] : []));
