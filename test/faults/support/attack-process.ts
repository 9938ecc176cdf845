/**
 * Runs the attackers in a process of their own, so that their hundreds of sockets do not slow the well-behaved client
 * that measures the server. Input: one JSON argument (target, body, plan, duration); output: one JSON line of tallies.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { attack, FAULTS, newTally, type FaultName, type Target } from './attackers.js';

export interface AttackPlan {
  target: Target;
  body: string;
  durationMs: number;
  plan: Partial<Record<FaultName, { count: number; pauseMs: number }>>;
}

export interface AttackReport {
  faults: Record<string, { injected: number; lifetimesMs: number[]; answers: Record<string, number> }>;
  /** The longest this process's event loop was late: the connection times it measured are late by as much. */
  eventLoopLagMs: number;
}

const input = JSON.parse(process.argv[2] ?? '{}') as AttackPlan;
const deadline = performance.now() + input.durationMs;
const until = (): boolean => performance.now() >= deadline;
const report: AttackReport = { faults: {}, eventLoopLagMs: 0 };
const lag = monitorEventLoopDelay({ resolution: 20 });
lag.enable();
await Promise.all(
  (Object.keys(input.plan) as FaultName[]).map(async (name) => {
    const { count, pauseMs } = input.plan[name] ?? { count: 0, pauseMs: 0 };
    const tally = newTally();
    await attack(FAULTS[name], input.target, tally, input.body, count, pauseMs, until);
    report.faults[name] = { injected: tally.injected, lifetimesMs: tally.lifetimesMs, answers: Object.fromEntries(tally.answers) };
  }),
);
lag.disable();
report.eventLoopLagMs = lag.max / 1e6;
process.stdout.write(`${JSON.stringify(report)}\n`);
