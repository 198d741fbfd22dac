import { readdirSync, readFileSync } from 'node:fs';

/**
 * The niceness of each of this process's threads, as the kernel reports it (Linux keeps one per thread: the voice's
 * worker threads set their own). Threads that end while they are read are left out.
 */
export function threadNiceness(): number[] {
  return readdirSync('/proc/self/task').flatMap((tid) => {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      return [Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])];
    } catch {
      return [];
    }
  });
}
