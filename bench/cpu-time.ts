import { readFileSync } from 'node:fs';

/** This process's CPU time (every thread) since `since`, in milliseconds. */
export const cpuMs = (since: NodeJS.CpuUsage): number => {
  const { user, system } = process.cpuUsage(since);
  return (user + system) / 1000;
};

/** The main thread's own CPU time in milliseconds: process.threadCpuUsage where Node has it, else Linux's /proc. */
export function mainThreadCpuMs(): number {
  const own = process as { threadCpuUsage?: () => NodeJS.CpuUsage };
  if (own.threadCpuUsage) {
    const { user, system } = own.threadCpuUsage();
    return (user + system) / 1000;
  }
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime, in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
