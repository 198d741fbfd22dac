import * as fs from 'node:fs';
import * as path from 'node:path';

describe('runtime flags', () => {
  it('are set by the first import of main.ts, before any module allocates', () => {
    const main = fs.readFileSync(path.join(__dirname, '..', 'src', 'main.ts'), 'utf8');
    const firstImport = /^import .*$/m.exec(main)?.[0];
    expect(firstImport).toBe("import './runtime-flags';");
    expect(fs.readFileSync(path.join(__dirname, '..', 'src', 'runtime-flags.ts'), 'utf8')).toContain("v8.setFlagsFromString('--no-allocation-site-pretenuring')");
  });
});
