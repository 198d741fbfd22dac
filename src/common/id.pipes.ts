import { Injectable, NotFoundException, Param, PipeTransform } from '@nestjs/common';
import { ApiParam } from '@nestjs/swagger';

/** Largest value of a PostgreSQL `integer` column. */
export const MAX_INT_ID = 2_147_483_647;
const INT_ID = /^[1-9][0-9]{0,9}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether the text is a UUID (any case). */
export const isUuid = (value: string) => UUID.test(value);

const shown = (value: string) => (value.length > 64 ? `${value.slice(0, 64)}…` : value);

/**
 * Parses an integer id from the path. Anything that cannot be an id (`abc`, `-1`, `1.5`, `99999999999`)
 * names no resource, so it is a 404 like any other unknown id, never a 400 or a 500.
 */
@Injectable()
export class IntIdPipe implements PipeTransform<string, number> {
  constructor(private readonly resource: string) {}

  transform(value: string): number {
    const id = INT_ID.test(value) ? Number(value) : NaN;
    if (!(id <= MAX_INT_ID)) throw new NotFoundException(`${this.resource} ${shown(value)} not found`);
    return id;
  }
}

/**
 * A path parameter that holds an integer id (`@IntIdParam('agentId', 'Agent') agentId: number`): parsed by
 * IntIdPipe, and described in the OpenAPI document as an `integer` from 1 to 2,147,483,647 (TypeScript's `number`
 * alone would say `number`).
 */
export const IntIdParam =
  (name: string, resource: string): ParameterDecorator =>
  (target, method, index) => {
    Param(name, new IntIdPipe(resource))(target, method, index);
    const descriptor = Object.getOwnPropertyDescriptor(target, method!)!;
    ApiParam({
      name,
      schema: { type: 'integer', minimum: 1, maximum: MAX_INT_ID },
      description: 'Anything that cannot be an id is a 404, like an unknown id',
    })(target, method!, descriptor);
  };

/** Parses a UUID from the path; anything else is a 404. Returned lowercase. */
@Injectable()
export class UuidPipe implements PipeTransform<string, string> {
  constructor(private readonly resource: string) {}

  transform(value: string): string {
    if (!UUID.test(value)) throw new NotFoundException(`${this.resource} ${shown(value)} not found`);
    return value.toLowerCase();
  }
}
