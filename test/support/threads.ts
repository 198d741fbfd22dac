import { readdirSync, readFileSync } from 'node:fs';

/**
 * The niceness of each of this process's threads, as the kernel reports it (Linux keeps one per thread: the voice's
 * worker threads set their own). Threads that end while they are read are left out.
 */
export function threadNiceness(): number[] {
  return readdirSync('/proc/self/task').flatMap((tid) => {
    try {
      return [Number(statFields(`/proc/self/task/${tid}/stat`)[NICE])];
    } catch {
      return [];
    }
  });
}

/** Index of the niceness among statFields' fields (field 19 of proc(5)). */
export const NICE = 16;

/**
 * The fields of a /proc stat file (`/proc/PID/stat`, or a thread's) after the command's name, so from the state on:
 * index 0 is field 3 of proc(5). The name, in parentheses, may hold spaces and parentheses itself. Throws once the
 * process or thread has ended.
 */
export function statFields(file: string): string[] {
  const stat = readFileSync(file, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
