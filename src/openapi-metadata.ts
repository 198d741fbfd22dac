import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The Swagger CLI plugin's metadata (types, defaults, validation limits and doc comments of every DTO and
 * controller), generated from the TypeScript source into src/metadata.ts, which is committed. The app loads
 * it at start-up, so the document is the same whichever compiler built the app (tsc, or swc in the tests).
 */
function findProjectRoot(dir: string): string {
  return fs.existsSync(path.join(dir, 'nest-cli.json')) ? dir : findProjectRoot(path.dirname(dir));
}

export const ROOT = findProjectRoot(__dirname);
export const METADATA_FILE = path.join(ROOT, 'src', 'metadata.ts');

// The types of the build tools loaded below (type positions only: nothing is loaded for them).
type MetadataGeneratorModule = typeof import('@nestjs/cli/lib/compiler/plugins/plugin-metadata-generator');
type SwaggerPluginModule = typeof import('@nestjs/swagger/plugin');
type SwaggerPluginOptions = ConstructorParameters<SwaggerPluginModule['ReadonlyVisitor']>[0];

/** What is read of nest-cli.json: the plugins' entries. */
interface NestCliJson {
  compilerOptions: { plugins: { name: string; options: SwaggerPluginOptions }[] };
}

function pluginOptions(): SwaggerPluginOptions {
  const nestCli = JSON.parse(fs.readFileSync(path.join(ROOT, 'nest-cli.json'), 'utf8')) as NestCliJson;
  const plugin = nestCli.compilerOptions.plugins.find((p) => p.name === '@nestjs/swagger');
  if (!plugin) throw new Error('nest-cli.json lists no @nestjs/swagger plugin');
  return plugin.options;
}

/** Generates the metadata file's text (slow: type-checks the project, a few seconds). */
export function generatePluginMetadata(): string {
  // Loaded lazily: these are build tools, not run-time dependencies.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- that lazy load, synchronous (so is this function)
  const { PluginMetadataGenerator } = require('@nestjs/cli/lib/compiler/plugins/plugin-metadata-generator') as MetadataGeneratorModule;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- that lazy load, synchronous (so is this function)
  const { ReadonlyVisitor } = require('@nestjs/swagger/plugin') as SwaggerPluginModule;
  const outputDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-metadata-'));
  try {
    new PluginMetadataGenerator().generate({
      visitors: [new ReadonlyVisitor({ ...pluginOptions(), pathToSource: path.join(ROOT, 'src') })],
      outputDir,
      filename: 'metadata.ts',
      tsProgramRef: ReadonlyVisitor.createTsProgram(path.join(ROOT, 'tsconfig.build.json')),
    });
    return fs.readFileSync(path.join(outputDir, 'metadata.ts'), 'utf8');
  } finally {
    fs.rmSync(outputDir, { recursive: true, force: true });
  }
}
