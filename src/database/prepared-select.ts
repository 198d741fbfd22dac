import { DataSource, ObjectLiteral, SelectQueryBuilder } from 'typeorm';

/** Stands in for a parameter while the query is built, and is recognised (by identity) among its bound values. */
class Slot {
  constructor(readonly name: string) {}
}

interface Compiled<P> {
  sql: string;
  /** The parameter behind each bind position ($1, $2, …). */
  names: (keyof P)[];
  dataSource: DataSource;
}

/**
 * A select whose shape never changes, built once by TypeORM's QueryBuilder and then run as its SQL with new
 * values. Building a 20-column select costs the service more CPU than PostgreSQL spends answering a lookup by
 * key (BENCHMARKS.md, "Performance"), and the routes that run such selects are the most frequent ones.
 * The rows are raw, as `getRawMany` gives them (use `selectProperties` in the builder).
 *
 * @param build makes the query from its parameters; it is called once, with placeholders for the values,
 * so it must not branch on them.
 */
export class PreparedSelect<P extends Record<string, unknown>, R> {
  private compiled?: Compiled<P>;

  /**
   * @param options.limit the parameter that is the row limit: bound as `LIMIT $n` after the built query
   * (QueryBuilder's own `limit()` writes the number into the SQL, which would make one query per value)
   */
  constructor(
    private readonly parameterNames: readonly (keyof P & string)[],
    private readonly build: (parameters: P) => SelectQueryBuilder<ObjectLiteral>,
    private readonly options: { limit?: keyof P & string } = {},
  ) {}

  async many(parameters: P): Promise<R[]> {
    const [sql, values] = this.statement(parameters);
    return this.compiled!.dataSource.query<R[]>(sql, values);
  }

  async one(parameters: P): Promise<R | undefined> {
    return (await this.many(parameters))[0];
  }

  /**
   * The SQL and its bound values (what `many` runs). An undefined value is refused, as TypeORM's `find*` do:
   * `account_id = NULL` must never be a silent query.
   */
  statement(parameters: P): [string, unknown[]] {
    const { sql, names } = (this.compiled ??= this.compile());
    const values = names.map((name) => {
      if (parameters[name] === undefined) throw new Error(`PreparedSelect: parameter ${String(name)} is undefined`);
      return parameters[name];
    });
    return [sql, values];
  }

  private compile(): Compiled<P> {
    const slots = Object.fromEntries(this.parameterNames.map((name) => [name, new Slot(name)])) as unknown as P;
    const builder = this.build(slots);
    const [sql, values] = builder.getQueryAndParameters();
    const names = values.map((value: unknown) => {
      if (!(value instanceof Slot)) throw new Error(`PreparedSelect: a value of the query is not one of its parameters (${String(value)})`);
      return value.name as keyof P;
    });
    const { limit } = this.options;
    if (limit === undefined) return { sql, names, dataSource: builder.connection };
    return { sql: `${sql} LIMIT $${names.length + 1}`, names: [...names, limit], dataSource: builder.connection };
  }
}
