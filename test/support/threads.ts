import { readdirSync, readFileSync } from 'node:fs';

/**
 * This process's threads at a niceness, by id (Linux keeps a niceness per thread: the voice's worker threads set
 * their own). Compare ids, not counts: a thread that has just been joined may still be listed for a moment as it
 * ends. Threads that end while they are read are left out.
 */
export function threadsAtNiceness(nice: number): number[] {
  return readdirSync('/proc/self/task')
    .map(Number)
    .filter((tid) => {
      try {
        return Number(statFields(`/proc/self/task/${tid}/stat`)[NICE]) === nice;
      } catch {
        return false;
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
