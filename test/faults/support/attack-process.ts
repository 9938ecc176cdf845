/**
 * Runs the attackers in a process of their own, so that their hundreds of sockets do not slow the well-behaved client
 * that measures the server. Input: one JSON argument (target, body, plan, duration); output: one JSON line of tallies.
 */
import { attack, FAULTS, newTally, type FaultName, type Target } from './attackers.js';

export interface AttackPlan {
  target: Target;
  body: string;
  durationMs: number;
  plan: Partial<Record<FaultName, { count: number; pauseMs: number }>>;
}

export interface AttackReport {
  [fault: string]: { injected: number; lifetimesMs: number[]; answers: Record<string, number> };
}

const input = JSON.parse(process.argv[2] ?? '{}') as AttackPlan;
const deadline = performance.now() + input.durationMs;
const until = (): boolean => performance.now() >= deadline;
const report: AttackReport = {};
await Promise.all(
  (Object.keys(input.plan) as FaultName[]).map(async (name) => {
    const { count, pauseMs } = input.plan[name] ?? { count: 0, pauseMs: 0 };
    const tally = newTally();
    await attack(FAULTS[name], input.target, tally, input.body, count, pauseMs, until);
    report[name] = { injected: tally.injected, lifetimesMs: tally.lifetimesMs, answers: Object.fromEntries(tally.answers) };
  }),
);
process.stdout.write(`${JSON.stringify(report)}\n`);
