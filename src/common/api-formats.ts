import { ApiProperty } from '@nestjs/swagger';

/** A timestamp of a response, as `toISOString()` writes it: documented as an RFC 3339 `date-time`. */
export const ApiDateTime = (options: { nullable?: boolean; example?: string } = {}) =>
  ApiProperty({ type: String, format: 'date-time', ...options });

/** A UUID of a response (a call's, a conversation's, a delivery's), documented as such. */
export const ApiUuid = () => ApiProperty({ type: String, format: 'uuid' });
