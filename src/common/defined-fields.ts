/**
 * The fields of a validated DTO that the client actually sent. (DTO classes declare every field, so absent
 * ones are own properties set to undefined; a PATCH must leave those columns alone.)
 */
export function definedFields<T extends object>(dto: T): Partial<T> {
  return Object.fromEntries(Object.entries(dto).filter(([, value]) => value !== undefined)) as Partial<T>;
}
