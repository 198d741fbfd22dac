import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { V8_FLAGS } from '../src/runtime-flags';

describe('runtime flags', () => {
  it('are set by the first import of main.ts, before any module allocates', () => {
    const main = fs.readFileSync(path.join(__dirname, '..', 'src', 'main.ts'), 'utf8');
    const firstImport = /^import .*$/m.exec(main)?.[0];
    expect(firstImport).toBe("import './runtime-flags';");
  });

  // v8.setFlagsFromString ignores a flag V8 does not know; node refuses to start with one.
  it.each(V8_FLAGS)('%s is a flag of this V8', (flag) => {
    const { status, stderr } = spawnSync(process.execPath, [flag, '-e', '0'], { encoding: 'utf8' });
    expect(stderr).toBe('');
    expect(status).toBe(0);
  });
});
