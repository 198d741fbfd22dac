import { ExpressAdapter } from '@nestjs/platform-express';
import { getMetadataArgsStorage } from 'typeorm';

let entityClasses: Set<unknown> | undefined;

/** An instance of a TypeORM entity class (all of them are declared by the time the first request is answered). */
function isEntity(value: unknown): value is object {
  if (value === null || typeof value !== 'object') return false;
  entityClasses ??= new Set(getMetadataArgsStorage().tables.map((table) => table.target));
  return entityClasses.has(value.constructor);
}

/**
 * Express, refusing to send an entity: a route that returns one without @Serialize would leak its internal
 * columns (account id, key hashes, storage keys), so it fails loudly with a 500 instead. A check at the
 * reply, not a global interceptor: it costs one set lookup per response.
 */
export class ApiExpressAdapter extends ExpressAdapter {
  override reply(response: unknown, body: unknown, statusCode?: number): unknown {
    const sample: unknown = Array.isArray(body) ? body[0] : body;
    if (isEntity(sample)) throw new Error(`A route returned a ${sample.constructor.name} entity without @Serialize`);
    return super.reply(response, body, statusCode);
  }
}
