/**
 * Bundles the website widget (src/widget-sites/widget, TypeScript with the DOM library) into the one minified
 * script served as /widget/embed.js: first the microphone's AudioWorklet on its own, whose text the widget loads
 * from a Blob URL, then the widget with that text inlined. `npm run build` writes it next to the compiled
 * embed-script.js; run from the TypeScript sources (tests, the CLI), embed-script.ts bundles it in memory.
 *
 * `node -r ./scripts/register.js scripts/build-widget.ts [outDir]` (default dist: the script goes to
 * <outDir>/src/widget-sites/widget-embed.js) prints its size, raw and gzipped.
 */
import { buildSync, BuildOptions } from 'esbuild';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { gzipSync } from 'node:zlib';
import { WIDGET_SCRIPT_VERSION } from '../src/widget-sites/embed-snippet';

const WIDGET_DIR = path.join(__dirname, '..', 'src', 'widget-sites', 'widget');
export const BUNDLE_FILE_NAME = 'widget-embed.js';

const COMMON: BuildOptions = {
  bundle: true,
  write: false,
  minify: true,
  format: 'iife',
  target: 'es2017',
  platform: 'browser',
  legalComments: 'none',
  tsconfig: path.join(WIDGET_DIR, 'tsconfig.json'),
  logLevel: 'silent',
};

function bundle(entry: string, define: Record<string, string> = {}): string {
  const result = buildSync({ ...COMMON, entryPoints: [path.join(WIDGET_DIR, entry)], define });
  return result.outputFiles![0].text;
}

/** The served script, for this version of it (`window.__voiceAgentWidgets[siteKey]`). */
export function bundleWidget(version: number): string {
  const worklet = bundle('capture-worklet.ts');
  return bundle('main.ts', { CAPTURE_WORKLET_SOURCE: JSON.stringify(worklet), WIDGET_VERSION: JSON.stringify(String(version)) });
}

/** Writes the served script next to the compiled embed-script.js of a build whose output is `outDir`; returns it. */
export function writeWidgetBundle(outDir: string): string {
  const outFile = path.join(outDir, 'src', 'widget-sites', BUNDLE_FILE_NAME);
  const script = bundleWidget(WIDGET_SCRIPT_VERSION);
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile, script);
  return script;
}

if (require.main === module) {
  const outDir = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'dist'));
  const script = writeWidgetBundle(outDir);
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  console.log(
    `${path.join(path.relative(process.cwd(), outDir), 'src', 'widget-sites', BUNDLE_FILE_NAME)}: ${kib(script.length)} (${kib(gzipSync(script).length)} gzipped)`,
  );
}
