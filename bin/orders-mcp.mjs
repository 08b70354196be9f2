#!/usr/bin/env node
// The MCP stdio server for desktop agents (docs/mcp.md).
import { launch } from './launch.mjs';

await launch('app/mcp-stdio-main');
