#!/usr/bin/env node
// The MCP stdio server for desktop agents (docs/mcp.md).
import { launch } from './launch.mjs';

await launch('edges/mcp/stdio-main');
