/**
 * `npm run client`: regenerates openapi.json (`npm run openapi`), then the typed client's types from it. With
 * `--check`, writes nothing and exits 1 when the file is stale (test/client.spec.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateClientSchema, SCHEMA_FILE } from './client-generator';

async function main(): Promise<void> {
  const text = await generateClientSchema();
  const file = path.relative(process.cwd(), SCHEMA_FILE);
  if (process.argv.includes('--check')) {
    if (fs.readFileSync(SCHEMA_FILE, 'utf8') === text) return;
    console.error(`${file} is stale: run \`npm run client\` and commit it`);
    process.exitCode = 1;
    return;
  }
  fs.writeFileSync(SCHEMA_FILE, text);
  console.log(`Wrote ${file}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
