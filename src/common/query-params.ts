import { Transform } from 'class-transformer';

/**
 * A query-string integer: only plain digits are converted (`1e2`, `0x10`, ` 5` and `1.5` stay strings and
 * are refused by @IsInt), so that what is accepted is exactly what is documented.
 */
export const ToInteger = () =>
  Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value));
