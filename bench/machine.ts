/**
 * What the machine is and how busy it was. On a shared machine another tenant's work shows up
 * as slower requests, so every load run records how much CPU went to processes that are not
 * ours: total busy time from /proc/stat minus the CPU time of the harness's own processes.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os';

/** Linux reports /proc times in USER_HZ ticks, 100 per second on every mainstream build. */
const TICKS_PER_SECOND = 100;

export interface MachineInfo {
  nproc: number;
  cpuModel: string;
  node: string;
  kernel: string;
  memoryBytes: number;
  loadavgAtStart: number[];
}

export function describeMachine(): MachineInfo {
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'));
    if (line) cpuModel = line.split(':')[1]!.trim();
  } catch {
    // Not Linux: os.cpus() is good enough.
  }
  return { nproc: availableParallelism(), cpuModel, node: process.version, kernel: release(), memoryBytes: totalmem(), loadavgAtStart: loadavg() };
}

/** utime + stime of a process, and of its reaped children when `withChildren`; 0 once it is gone. */
export function processTicks(pid: number, withChildren = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields are counted after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = Number(fields[11]) + Number(fields[12]);
    return withChildren ? own + Number(fields[13]) + Number(fields[14]) : own;
  } catch {
    return 0;
  }
}

/** Microseconds of CPU a process (or several, such as nginx's master and worker) has used. */
export function processCpuUs(pids: number[]): number {
  return pids.reduce((sum, pid) => sum + processTicks(pid), 0) * (1_000_000 / TICKS_PER_SECOND);
}

/** The PIDs of a process's direct children (nginx workers under their master). */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Sockets a process holds open (its /proc/<pid>/fd entries that are sockets); 0 once it is gone. */
export function openSockets(pid: number): number {
  let sockets = 0;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets++;
      } catch {
        // Closed between the listing and the read.
      }
    }
  } catch {
    return 0;
  }
  return sockets;
}

interface MachineCpu {
  busy: number;
  steal: number;
}

function readMachineCpu(): MachineCpu {
  try {
    const first = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = first;
    return { busy: user + nice + system + irq + softirq + steal, steal };
  } catch {
    return { busy: 0, steal: 0 };
  }
}

export interface BusySnapshot {
  at: number;
  machine: MachineCpu;
  ours: number;
}

/** `ourPids` are the live children; the harness's own time includes the children it reaped (wrk). */
export function snapshotBusy(ourPids: number[]): BusySnapshot {
  const ours = processTicks(process.pid, true) + ourPids.reduce((sum, pid) => sum + processTicks(pid), 0);
  return { at: performance.now(), machine: readMachineCpu(), ours };
}

export interface ForeignLoad {
  /** Average cores used by processes that are not ours (steal included) during the interval. */
  foreignCores: number;
  stealCores: number;
  loadavg1: number;
}

export function foreignLoad(before: BusySnapshot, after: BusySnapshot): ForeignLoad {
  const seconds = Math.max((after.at - before.at) / 1000, 1e-3);
  const machine = after.machine.busy - before.machine.busy;
  const ours = after.ours - before.ours;
  return {
    foreignCores: round(Math.max(0, machine - ours) / TICKS_PER_SECOND / seconds, 3),
    stealCores: round((after.machine.steal - before.machine.steal) / TICKS_PER_SECOND / seconds, 3),
    loadavg1: loadavg()[0]!,
  };
}

export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
