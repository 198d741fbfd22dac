import {
  ArgumentMetadata,
  BadRequestException,
  PipeTransform,
  UnprocessableEntityException,
  ValidationError,
  ValidationPipe,
} from '@nestjs/common';
import { ErrorDetail } from './error-response.dto';

/** A 400 whose body carries one detail per invalid field. */
export class RequestValidationException extends BadRequestException {
  constructor(readonly details: ErrorDetail[]) {
    super(details.map((detail) => detail.message).join('; '));
  }
}

/**
 * A 422 whose body names the fields another party refused although they are valid (a carrier that does not accept
 * the credentials, or does not have the number), one detail per field, as a validation failure does.
 */
export class UnprocessableFieldsException extends UnprocessableEntityException {
  constructor(readonly details: ErrorDetail[]) {
    super(details.map((detail) => detail.message).join('; '));
  }
}

function flatten(errors: ValidationError[], parent = ''): ErrorDetail[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ field, message }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

const validationPipe = (forbidUnknownFields: boolean) =>
  new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: forbidUnknownFields,
    forbidUnknownValues: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => new RequestValidationException(flatten(errors)),
  });

/**
 * The global pipe (registered as APP_PIPE): strict DTOs. A body field the DTO does not declare is a 400;
 * an undeclared query parameter is dropped (ignored, as API users expect of query strings), while a bad value
 * of a declared one is still a 400. Path parameters pass through as the text they were: their own pipes
 * (`IntIdParam`, `UuidPipe`) read them, and Nest runs global pipes first, so converting `number` ones here
 * would hand `IntIdPipe` `1` for `01`, `0x1` or `1e0`, which name no resource.
 */
export function createValidationPipe(): PipeTransform {
  const bodies = validationPipe(true);
  const queries = validationPipe(false);
  return {
    transform: (value: unknown, metadata: ArgumentMetadata) => {
      if (metadata.type === 'param') return value;
      return (metadata.type === 'query' ? queries : bodies).transform(value, metadata);
    },
  };
}
