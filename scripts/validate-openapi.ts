/**
 * Validates an OpenAPI document (openapi.json by default, or the file given) with @apidevtools/swagger-parser: its
 * structure against the OpenAPI 3.1 schema, and every `$ref` resolved. Exits 1 with the first problem. A script of
 * its own: the parser's dependencies are ES modules, which Jest cannot load on Node 20 (test/openapi.spec.ts runs it).
 *
 *   node -r ./scripts/register.js scripts/validate-openapi.ts [file]
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import * as fs from 'node:fs';
import * as path from 'node:path';

async function main(): Promise<void> {
  const file = process.argv[2] ?? path.join(__dirname, '..', 'openapi.json');
  const document = JSON.parse(fs.readFileSync(file, 'utf8')) as never;
  const validated = (await SwaggerParser.validate(document)) as { openapi?: string };
  process.stdout.write(`${path.basename(file)}: a valid OpenAPI ${validated.openapi} document\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(1);
});
