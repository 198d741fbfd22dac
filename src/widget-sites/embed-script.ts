import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WIDGET_SCRIPT_VERSION } from './embed-snippet';

/**
 * The source of `GET /widget/embed.js`: the widget's TypeScript (./widget, see main.ts there) bundled and minified
 * by scripts/build-widget.ts. `npm run build` writes the bundle next to this module's compiled file, where the
 * server reads it; run from the TypeScript sources (the tests, the CLI), nothing was built, so it is bundled here,
 * once per process, and is never older than the sources.
 */
const BUNDLE_FILE_NAME = 'widget-embed.js';

function loadBundle(): string {
  if (path.extname(__filename) === '.ts') {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { bundleWidget } = require('../../scripts/build-widget') as typeof import('../../scripts/build-widget');
    return bundleWidget(WIDGET_SCRIPT_VERSION);
  }
  const file = path.join(__dirname, BUNDLE_FILE_NAME);
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`The widget's script ${file} is missing: build it with npm run build`, { cause: error });
  }
}

export const EMBED_SCRIPT = loadBundle();

/** Strong validator for conditional GETs of the script. */
export const EMBED_SCRIPT_ETAG = `"${createHash('sha256').update(EMBED_SCRIPT).digest('base64url').slice(0, 22)}"`;
