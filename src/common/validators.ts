import { Transform } from 'class-transformer';
import { IsIn, ValidateIf } from 'class-validator';

/**
 * The field may be left out, but not sent as null. (class-validator's @IsOptional also lets null through,
 * which would then reach a NOT NULL column.)
 */
export const IsOmittable = () => ValidateIf((_object, value) => value !== undefined);

/** Trims surrounding white space of a string value; other types are left for the validators to refuse. */
export const Trim = () => Transform(({ value }) => (typeof value === 'string' ? value.trim() : value));

/** One of a fixed list; the message lists the allowed values. */
export const IsOneOf = (values: readonly unknown[]) =>
  IsIn(values as unknown[], { message: ({ property }) => `${property} must be one of: ${values.join(', ')}` });
