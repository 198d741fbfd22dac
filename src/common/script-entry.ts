import * as path from 'node:path';

/** Whether this code runs as TypeScript sources (tests, scripts) rather than as the compiled build. */
const FROM_SOURCE = __filename.endsWith('.ts');
const REGISTER_HOOK = path.join(__dirname, '..', '..', 'scripts', 'register.js');

/**
 * A script of ours for a worker thread or a child process to run, named without its extension beside the caller
 * (`dir`): built code runs the compiled `.js`; sources run the `.ts` through the project's register hook.
 */
export function scriptEntry(dir: string, name: string): { file: string; execArgv: string[] } {
  return {
    file: path.join(dir, `${name}${FROM_SOURCE ? '.ts' : '.js'}`),
    execArgv: FROM_SOURCE ? ['-r', REGISTER_HOOK] : [],
  };
}
