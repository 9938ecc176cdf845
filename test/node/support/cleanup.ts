/**
 * Undoes a node-suite run that ended without its own teardown (the test process killed or crashed): stops what its
 * state file lists, by PID, and puts the host back as that run found it. scripts/node-run.mjs runs it after vitest.
 */
import { cleanUpStaleRun } from './cluster.js';

await cleanUpStaleRun();
