#!/usr/bin/env node
// The MCP stdio server for desktop agents (see README, "MCP tools").
import { launch } from './launch.mjs';

await launch('edges/mcp/stdio-main');
