import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiSecurity } from '@nestjs/swagger';

export const IS_PUBLIC = 'auth:isPublic';

/**
 * Marks a route (or controller) as answering without an API key. Every such route must also be on the
 * route-walk test's public list (`PUBLIC_ROUTES` in test/routes.ts; test/routes.spec.ts fails otherwise).
 * In the OpenAPI document it needs no key.
 */
export const Public = () => applyDecorators(SetMetadata(IS_PUBLIC, true), ApiSecurity({}));
