// Every drill, in the order `make drills` runs them.
import type { Drill } from '../types.js';
import { drill as agentKill } from './agent-kill.js';
import { drill as runtimeRestart } from './runtime-restart.js';
import { drill as apiserverDown } from './apiserver-down.js';
import { drill as watchFaults } from './watch-faults.js';
import { drill as badInput } from './bad-input.js';

export const allDrills: Drill[] = [agentKill, runtimeRestart, apiserverDown, watchFaults, badInput];
