// Every drill, in the order `make drills` runs them.
import type { Drill } from '../types.js';
import { drill as agentKill } from './agent-kill.js';
import { drill as runtimeRestart } from './runtime-restart.js';
import { drill as apiserverDown } from './apiserver-down.js';
import { drill as watchFaults } from './watch-faults.js';
import { drill as badInput } from './bad-input.js';
import { drill as churn } from './churn.js';
import { drill as diskFull } from './disk-full.js';

export const allDrills: Drill[] = [agentKill, runtimeRestart, apiserverDown, watchFaults, badInput, churn, diskFull];
