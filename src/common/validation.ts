import { BadRequestException, ValidationError, ValidationPipe } from '@nestjs/common';
import { ErrorDetail } from './error-response.dto';

/** A 400 whose body carries one detail per invalid field. */
export class RequestValidationException extends BadRequestException {
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

/** The global pipe (registered as APP_PIPE): strict DTOs, unknown fields refused. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => new RequestValidationException(flatten(errors)),
  });
}
