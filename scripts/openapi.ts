/** Writes the sorted OpenAPI document to openapi.json (`npm run openapi`: runs from the build, whose metadata step has just run). */
import 'reflect-metadata';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadConfig } from '../src/config/config';
import { generateOpenApiDocument, stringifyOpenApiDocument } from '../src/openapi';
import { ROOT } from '../src/openapi-metadata';

async function main(): Promise<void> {
  const document = await generateOpenApiDocument(loadConfig({}));
  fs.writeFileSync(path.join(ROOT, 'openapi.json'), stringifyOpenApiDocument(document));
  console.log(`Wrote openapi.json (${Object.keys(document.paths).length} paths)`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
