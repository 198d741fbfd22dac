import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, ValidateBy, ValidateIf } from 'class-validator';
import { codePointLength } from './code-points';

export { codePointLength };

/**
 * The field may be left out, but not sent as null. (class-validator's @IsOptional also lets null through,
 * which would then reach a NOT NULL column.)
 */
export const IsOmittable = () => ValidateIf((_object, value) => value !== undefined);

/** Trims surrounding white space of a string value; other types are left for the validators to refuse. */
export const Trim = () => Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

/** One of a fixed list (`{ each: true }`: every item of an array); the message lists the allowed values. */
export const IsOneOf = (values: readonly unknown[], options: { each?: boolean } = {}) =>
  IsIn(values as unknown[], {
    ...options,
    message: ({ property }) => `${property} must ${options.each ? 'each ' : ''}be one of: ${values.join(', ')}`,
  });

const lengthRule = (min: number, max: number) => (min > 0 ? `${min}–${max} characters` : `at most ${max} characters`);

/**
 * A string of `min` to `max` characters counted as PostgreSQL counts them (`codePointLength`), documented as
 * the OpenAPI `minLength`/`maxLength`. Every length rule of the API's DTOs is this one.
 */
export const CodePointLength = (min: number, max: number) =>
  applyDecorators(
    ValidateBy({
      name: 'codePointLength',
      constraints: [min, max],
      validator: {
        validate: (value) => {
          if (typeof value !== 'string') return false;
          const length = codePointLength(value);
          return length >= min && length <= max;
        },
        defaultMessage: (args) => `${args?.property ?? 'value'} must be ${lengthRule(min, max)}`,
      },
    }),
    ApiProperty({ minLength: min > 0 ? min : undefined, maxLength: max }),
  );

/** At most `max` characters (code points, as PostgreSQL counts them). */
export const MaxCodePointLength = (max: number) => CodePointLength(0, max);

/**
 * The decimal places a number needs, read from its shortest round-trip form, exponents included (`1.5e-7`
 * needs 8: class-validator's `maxDecimalPlaces` looks for digits after a `.` only and passes it).
 */
export function decimalPlaces(value: number): number {
  const [mantissa, exponent = '0'] = String(value).split('e');
  return Math.max(0, (mantissa.split('.')[1]?.length ?? 0) - Number(exponent));
}

/**
 * A finite number with at most `max` decimal places (see decimalPlaces). Not documented as `multipleOf`: JSON
 * Schema validators test that in floating point, where 61.005 is not a multiple of 0.001.
 */
export const IsNumberWithDecimals = (max: number) =>
  ValidateBy({
    name: 'isNumberWithDecimals',
    constraints: [max],
    validator: {
      validate: (value) => typeof value === 'number' && Number.isFinite(value) && decimalPlaces(value) <= max,
      defaultMessage: (args) => `${args?.property ?? 'value'} must be a number with at most ${max} decimals`,
    },
  });
