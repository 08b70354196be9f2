#!/usr/bin/env node
// The operator CLI (see README, "Operating it").
import { launch } from './launch.mjs';

await launch('edges/cli/main');
