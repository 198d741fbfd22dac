/**
 * Marks the methods of a repository that run SQL. Two things follow from the mark:
 * - `npm run sql` calls each marked method with its example arguments and writes the SQL it ran into
 *   src/queries/<repository>.sql, which is checked in (test/sql.spec.ts fails when it is stale, and when a
 *   statement of an account-scoped method does not constrain account_id);
 * - an account-scoped method refuses to run without an account: its first argument must be an account id.
 */

/** Arguments to call a method with when generating its SQL; `name` tells several shapes of one method apart. */
export interface QueryExample {
  name?: string;
  params: unknown[];
}

export interface QueryMetadata {
  /** Why the method is not scoped to one account; undefined for an account-scoped method. */
  unscopedReason?: string;
  examples: QueryExample[];
}

export const QUERY_METADATA = Symbol('database:query');

type Example = unknown[] | QueryExample;

const toExample = (example: Example): QueryExample => (Array.isArray(example) ? { params: example } : example);

const isAccountId = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value > 0;

function mark(metadata: QueryMetadata, guard: ((name: string, args: unknown[]) => void) | undefined): MethodDecorator {
  return <T>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<T>) => {
    const method = descriptor.value as (...args: unknown[]) => unknown;
    const name = `${target.constructor.name}.${String(key)}`;
    const marked = guard
      ? function (this: unknown, ...args: unknown[]) {
          guard(name, args);
          return method.apply(this, args);
        }
      : method;
    Reflect.defineMetadata(QUERY_METADATA, metadata, marked);
    descriptor.value = marked as T;
  };
}

/** A method scoped to one account: `(accountId, ...)`. Called without a valid account id, it throws before any SQL runs. */
export const AccountQuery = (...examples: Example[]): MethodDecorator =>
  mark({ examples: examples.map(toExample) }, (name, args) => {
    if (!isAccountId(args[0])) throw new Error(`${name} must be called with an account id first, got ${String(args[0])}`);
  });

/** A method that is not scoped to an account, with the reason (a key looked up by its hash, a job's own row). */
export const UnscopedQuery = (reason: string, ...examples: Example[]): MethodDecorator =>
  mark({ unscopedReason: reason, examples: examples.map(toExample) }, undefined);

/** The marked methods of a repository class (its prototype), by name. */
export function queryMethods(prototype: object): [string, QueryMetadata][] {
  return Object.getOwnPropertyNames(prototype).flatMap((key) => {
    const value = (prototype as Record<string, unknown>)[key];
    const metadata = typeof value === 'function' ? (Reflect.getMetadata(QUERY_METADATA, value) as QueryMetadata | undefined) : undefined;
    return metadata ? [[key, metadata] as [string, QueryMetadata]] : [];
  });
}
