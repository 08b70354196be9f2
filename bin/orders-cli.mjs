#!/usr/bin/env node
// The operator CLI (docs/operations.md).
import { launch } from './launch.mjs';

await launch('app/cli-main');
