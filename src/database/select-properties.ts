import { EntityMetadata, ObjectLiteral, SelectQueryBuilder } from 'typeorm';

/**
 * Selects entity properties as plain objects keyed by property name (for `getRawMany`/`getRawOne`), which
 * skips TypeORM's entity hydration: on the 200-row call list that hydration costs more than everything else
 * the service adds to the query (BENCHMARKS.md, "Performance"). Values are converted by the pg driver as
 * they are for entities (timestamptz → Date, jsonb → parsed, integer and double precision → number), so the
 * objects can go through the same `toXResponse` mappers. Relations are not loaded.
 */
export function selectProperties<T extends ObjectLiteral>(builder: SelectQueryBuilder<T>, properties: readonly (keyof T & string)[]): SelectQueryBuilder<T> {
  const [first, ...rest] = properties;
  builder.select(`${builder.alias}.${first}`, first);
  for (const property of rest) builder.addSelect(`${builder.alias}.${property}`, property);
  return builder;
}

/**
 * The same properties for a `RETURNING` clause (`UPDATE … RETURNING`), each keyed by its property name like
 * `selectProperties`, so that a write can answer with the row it wrote instead of reading it again.
 */
export function returningProperties(metadata: EntityMetadata, properties: readonly string[]): string {
  return properties
    .map((property) => {
      const column = metadata.findColumnWithPropertyName(property);
      if (!column) throw new Error(`${metadata.name} has no column for property ${property}`);
      return `"${column.databaseName}" AS "${property}"`;
    })
    .join(', ');
}
