/** Regenerates src/metadata.ts (run by `npm run build` and `npm run openapi`). */
import * as fs from 'node:fs';
import { generatePluginMetadata, METADATA_FILE } from '../src/openapi-metadata';

const text = generatePluginMetadata();
if (!fs.existsSync(METADATA_FILE) || fs.readFileSync(METADATA_FILE, 'utf8') !== text) {
  fs.writeFileSync(METADATA_FILE, text);
  console.log('Updated src/metadata.ts');
}
