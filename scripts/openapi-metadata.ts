/**
 * Regenerates src/metadata.ts (run by `npm run build` and `npm run openapi`).
 * With --check, changes nothing and exits 1 when the file is stale (used by test/openapi.spec.ts).
 */
import * as fs from 'node:fs';
import { generatePluginMetadata, METADATA_FILE } from '../src/openapi-metadata';

const text = generatePluginMetadata();
const current = fs.existsSync(METADATA_FILE) ? fs.readFileSync(METADATA_FILE, 'utf8') : '';
if (process.argv.includes('--check')) {
  if (current !== text) {
    console.error('src/metadata.ts is stale');
    process.exit(1);
  }
} else if (current !== text) {
  fs.writeFileSync(METADATA_FILE, text);
  console.log('Updated src/metadata.ts');
}
